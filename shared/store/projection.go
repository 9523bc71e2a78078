package store

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
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

// names is a projection of attrs for the SDK's expression builder, which
// names each (many attribute names, such as status and date, are reserved
// words).
func names(attrs []string) expression.ProjectionBuilder {
	var p expression.ProjectionBuilder
	for _, a := range attrs {
		p = p.AddNames(expression.Name(a))
	}
	return p
}

// projection is a ProjectionExpression of attrs and its names, for a
// read that takes no other expression (GetItem, BatchGetItem).
func projection(attrs []string) (*string, map[string]string, error) {
	expr, err := expression.NewBuilder().WithProjection(names(attrs)).Build()
	if err != nil {
		return nil, nil, fmt.Errorf("store: a projection of %v: %w", attrs, err)
	}
	return expr.Projection(), expr.Names(), nil
}
