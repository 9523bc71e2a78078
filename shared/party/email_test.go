package party_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/party"
)

// lookAlikes are addresses a probe created as new people beside
// alice@, bob@ and josé@ (#38): each reads as one of them. The fourth
// field is "refused" when the address holds an invisible or
// direction-changing character (422 on email), else the held address it
// collides with (422 already_exists naming that person).
var lookAlikes = []struct{ name, email, says, holder string }{
	{"full-width a", "ａlice@example.dk", "", "alice@example.dk"},
	{"full-width BOB", "ＢＯＢ@example.dk", "", "bob@example.dk"},
	{"upper case", "BOB@EXAMPLE.DK", "", "bob@example.dk"},
	{"decomposed é", "jose\u0301@example.dk", "", "josé@example.dk"},
	{"domain as punycode", "anne@xn--bcher-kva.dk", "", "anne@bücher.dk"},
	{"full-width domain", "anne@ＢÜＣＨＥＲ.dk", "", "anne@bücher.dk"},
	{"zero-width space", "a\u200blice@example.dk", "U+200B", ""},
	{"soft hyphen", "bob\u00ad@example.dk", "U+00AD", ""},
	{"byte order mark", "bob\ufeff@example.dk", "U+FEFF", ""},
	{"word joiner", "b\u2060ob@example.dk", "U+2060", ""},
	{"zero-width joiner in the domain", "bob@exa\u200dmple.dk", "U+200D", ""},
	{"right-to-left override", "\u202ekd.elpmaxe@bob", "U+202E", ""},
	{"left-to-right mark", "bob\u200e@example.dk", "U+200E", ""},
	{"no-break space", "bob\u00a0@example.dk", "U+00A0", ""},
	{"Hangul filler", "bob\u3164@example.dk", "U+3164", ""},
}

// held are the people each organisation has first.
var held = []string{"alice@example.dk", "bob@example.dk", "josé@example.dk", "anne@bücher.dk"}

type answer struct {
	status int
	body   map[string]any
}

func createPerson(e *apitest.Env, key, idem, name, email string) answer {
	body, _ := json.Marshal(map[string]string{"name": name, "email": email})
	r := e.Post("/api/v1/people", key, idem, string(body))
	if d, ok := r.Body["data"].(map[string]any); ok {
		return answer{r.Status, d}
	}
	return answer{r.Status, r.Body}
}

// TestEmailsThatReadAlikeAreOnePerson (#38, item 4): in each of four
// organisations at once, after alice@, bob@, josé@ and anne@bücher.dk,
// every look-alike the probe found (and a few more) is sent at once:
// those with an invisible or direction-changing character are refused on
// email naming it, the others are already_exists naming the person who
// holds the address; nothing is created. In another organisation each
// is its own person, stored and returned as sent (in NFC). The same
// address in two spellings sent at once makes one person.
func TestEmailsThatReadAlikeAreOnePerson(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	var wg sync.WaitGroup
	for o := range 4 {
		org := e.Org(fmt.Sprintf("Look-alikes %d", o))
		key := e.Key(org)
		ids := map[string]string{}
		for i, email := range held {
			a := createPerson(e, key, fmt.Sprintf("held-%d", i), "Held", email)
			if a.status != 201 || a.body["email"] != email {
				t.Fatalf("org %d: %s: %d %v", o, email, a.status, a.body)
			}
			ids[email] = a.body["id"].(string)
		}
		for i, c := range lookAlikes {
			wg.Go(func() {
				a := createPerson(e, key, fmt.Sprintf("alike-%d", i), "Alike", c.email)
				switch {
				case c.says != "":
					if a.status != 422 || a.body["field"] != "email" || !strings.Contains(fmt.Sprint(a.body["message"]), c.says) {
						t.Errorf("org %d, %s (%q): %d %v; want 422 on email naming %s", o, c.name, c.email, a.status, a.body, c.says)
					}
				case a.status != 422 || a.body["code"] != "already_exists" || a.body["field"] != "email" || a.body["existing_id"] != ids[c.holder]:
					t.Errorf("org %d, %s (%q): %d %v; want already_exists naming %s's person %s", o, c.name, c.email, a.status, a.body, c.holder, ids[c.holder])
				}
			})
		}
	}
	// A fresh organisation: each spelling that is not refused is a person
	// of its own, stored as sent (NFC); all at once, so each pair of
	// spellings of one address races, and one of each pair wins.
	org := e.Org("Spellings")
	key := e.Key(org)
	var mu sync.Mutex
	made := map[string][]string{} // normalised address -> the ids made
	for i, c := range lookAlikes {
		if c.says != "" {
			continue
		}
		for j, email := range []string{c.email, c.holder} {
			wg.Go(func() {
				a := createPerson(e, key, fmt.Sprintf("spelling-%d-%d", i, j), "Spelling", email)
				mu.Lock()
				defer mu.Unlock()
				switch a.status {
				case 201:
					want := strings.ReplaceAll(email, "jose\u0301", "josé") // NFC
					if a.body["email"] != want {
						t.Errorf("%s: stored and returned as %q, want %q", c.name, a.body["email"], want)
					}
					made[party.NormalizeEmail(email)] = append(made[party.NormalizeEmail(email)], a.body["id"].(string))
				case 422:
					if a.body["code"] != "already_exists" {
						t.Errorf("%s (%q): %v", c.name, email, a.body)
					}
				default:
					t.Errorf("%s (%q): %d %v", c.name, email, a.status, a.body)
				}
			})
		}
	}
	wg.Wait()
	if len(made) != len(held) {
		t.Errorf("%d distinct people made of the spellings of %d addresses: %v", len(made), len(held), made)
	}
	for addr, ids := range made {
		if len(ids) != 1 {
			t.Errorf("%s: %d people: %v", addr, len(ids), ids)
		}
	}
}

// TestInvisibleNamesAreEmpty: a name of only invisible characters (zero-
// width, direction marks, a Hangul filler, the Braille blank, a combining
// mark alone) is refused as empty, on name; a name with such characters
// and letters is kept.
func TestInvisibleNamesAreEmpty(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	key := e.Key(e.Org("Names"))
	var wg sync.WaitGroup
	for i, name := range []string{"\u200b", "\u200d\u200c", "\u202e\u202c", "\u3164", "\u2800", "\u0301", " \u00a0\u2060 ", "\ufe0f", "\u115f"} {
		wg.Go(func() {
			a := createPerson(e, key, fmt.Sprintf("blank-%d", i), name, fmt.Sprintf("blank%d@example.dk", i))
			if a.status != 422 || a.body["field"] != "name" || !strings.Contains(fmt.Sprint(a.body["message"]), "must not be empty") {
				t.Errorf("name %+q: %d %v; want 422 on name, empty", name, a.status, a.body)
			}
		})
	}
	wg.Go(func() {
		if a := createPerson(e, key, "visible", "Zoë\u200d", "visible@example.dk"); a.status != 201 {
			t.Errorf("a name with letters: %d %v", a.status, a.body)
		}
	})
	wg.Wait()
}

// TestNormalizeEmail: the form uniqueness is decided in.
func TestNormalizeEmail(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Anne@Example.DK": "anne@example.dk",
		"ａｎｎｅ@ｅｘａｍｐｌｅ.ｄｋ":         "anne@example.dk",
		"jose\u0301@example.dk":   "josé@example.dk",
		"JOSÉ@example.dk":         "josé@example.dk",
		"straße@example.dk":       "strasse@example.dk",
		"anne@xn--bcher-kva.dk":   "anne@bücher.dk",
		"  anne@example.dk ":      "anne@example.dk",
		"anne@not-xn--a-label.dk": "anne@not-xn--a-label.dk",
	} {
		if got := party.NormalizeEmail(in); got != want {
			t.Errorf("NormalizeEmail(%q) = %q, want %q", in, got, want)
		}
	}
}
