package cpr_test

import (
	"testing"

	"github.com/practice-api/practice-api/shared/cpr"
)

// BenchmarkFind is the detector on what write bodies carry: short names,
// ids, descriptions with dates, and a long description.
func BenchmarkFind(b *testing.B) {
	inputs := []string{"Nordlys ApS", "anne@example.dk", "5eed0000-0000-4000-8000-000000000001", "Lejekontrakt",
		"Møde 15.03.2024 kl. 10.30 om lejekontrakten, faktura 123456789012",
		"Gennemgang af bilag og korrespondance med modparten vedrørende fristforlængelse; udkast til svarskrift sendt til klient 14.03.2025 10.30-11.15"}
	b.ReportAllocs()
	for b.Loop() {
		for _, s := range inputs {
			if cpr.Find(s) {
				b.Fatal(s)
			}
		}
	}
}
