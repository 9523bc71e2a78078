package localproc

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// EngineJVM is the Java process of the engine whose shell is shellPID (a
// Proc's EnginePID: DynamoDB Local runs under a small shell, ddblocal's):
// the process to SIGSTOP to make the engine hang. It waits a few seconds
// for the shell to have started it.
func EngineJVM(t *testing.T, shellPID int) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		entries, _ := os.ReadDir("/proc")
		for _, ent := range entries {
			stat, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "stat"))
			if err != nil {
				continue
			}
			s := string(stat)
			i := strings.LastIndexByte(s, ')')
			if i < 0 || !strings.Contains(s[:i], "java") {
				continue
			}
			if f := strings.Fields(s[i+1:]); len(f) > 1 && f[1] == strconv.Itoa(shellPID) {
				pid, _ := strconv.Atoi(ent.Name())
				return pid
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no java process under the engine's shell %d (this test needs /proc)", shellPID)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
