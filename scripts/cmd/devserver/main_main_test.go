package main_test

import (
	"os"
	"testing"

	"github.com/practice-api/practice-api/scripts/internal/localproc"
)

// TestMain removes the devserver binary the tests built (localproc.Build)
// when they end.
func TestMain(m *testing.M) { os.Exit(localproc.Main(m)) }
