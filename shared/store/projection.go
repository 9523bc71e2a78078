package store

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
)

var attrsCache sync.Map // reflect.Type → []string

// AttrsOf lists the attributes a value of T decodes: the dynamodbav names of
// its fields, embedded structs flattened, store.Keys left out (a read that
// returns an item to a client needs none of its keys). Computed once per type.
func AttrsOf[T any]() []string {
	t := reflect.TypeFor[T]()
	if v, ok := attrsCache.Load(t); ok {
		return v.([]string)
	}
	var out []string
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Type == reflect.TypeFor[Keys]() || !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("dynamodbav"), ",")
			if name == "-" {
				continue
			}
			if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
				walk(f.Type)
				continue
			}
			if name == "" {
				name = f.Name
			}
			out = append(out, name)
		}
	}
	walk(t)
	attrsCache.Store(t, out)
	return out
}

// attrsExcept is AttrsOf[T] less omit.
func attrsExcept[T any](omit []string) []string {
	attrs := AttrsOf[T]()
	if len(omit) == 0 {
		return attrs
	}
	return slices.DeleteFunc(slices.Clone(attrs), func(a string) bool { return slices.Contains(omit, a) })
}

// projection is a ProjectionExpression of attrs, with names #p0… (many
// attribute names, such as status and date, are reserved words).
func projection(attrs []string, names map[string]string) string {
	var b strings.Builder
	for i, a := range attrs {
		if i > 0 {
			b.WriteString(", ")
		}
		n := "#p" + strconv.Itoa(i)
		names[n] = a
		b.WriteString(n)
	}
	return b.String()
}
