package workflow

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

type light string

var lights = Transitions[light]{
	"red":    {"green"},
	"green":  {"amber", "off"},
	"amber":  {"red", "off"},
	"off":    {},
	"broken": nil, // a state with no successors, written as nil
}

func TestCheck(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		from, to light
		ok       bool
		says     string // a fragment of the refusal
	}{
		{"red", "green", true, ""},
		{"green", "off", true, ""},
		{"green", "red", false, "from green it can move to: amber, off"},
		{"red", "red", false, "cannot move from red to red"},
		{"off", "red", false, "none: it is final"},
		{"broken", "red", false, "none: it is final"},
		{"red", "blue", false, `"blue" is not a light status`},
		{"purple", "red", false, `light is in unknown status "purple"`},
		{"", "red", false, "unknown status"},
	} {
		err := lights.Check("light", c.from, c.to)
		if (err == nil) != c.ok {
			t.Errorf("%s → %s: %v, want allowed %v", c.from, c.to, err, c.ok)
			continue
		}
		if err != nil && (!errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.says)) {
			t.Errorf("%s → %s: %q, want a refusal saying %q", c.from, c.to, err, c.says)
		}
	}
}

func TestStatesAndStrings(t *testing.T) {
	t.Parallel()
	if got, want := lights.States(), []light{"amber", "broken", "green", "off", "red"}; !slices.Equal(got, want) {
		t.Fatalf("States %v, want %v", got, want)
	}
	for _, c := range []struct {
		s    light
		want bool
	}{{"off", true}, {"broken", true}, {"blue", false}, {"", false}} {
		if lights.Has(c.s) != c.want {
			t.Errorf("Has(%q) = %v", c.s, !c.want)
		}
	}
	if got := Strings([]light{"red", "off"}); !slices.Equal(got, []string{"red", "off"}) {
		t.Fatalf("Strings %v", got)
	}
}
