package cloudwatch

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// Expr is a metric math expression of the subset localcloud evaluates:
// numbers, the ids of the alarm's other metrics, + - * /, comparisons
// (> >= < <= == !=, 1 or 0), AND/&&, OR/||, NOT/!, IF(condition, then,
// else) and FILL(m, number), as CloudWatch's metric math defines them (an
// operation on a missing data point is missing, which FILL fills); any other function
// stops localcloud at start (ParseExpr's error).
// https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/using-metric-math.html
type Expr func(vars map[string]float64) (float64, bool)

// ParseExpr reads expr; ids are the metric ids it may name.
func ParseExpr(expr string) (Expr, []string, error) {
	p := &parser{s: expr}
	e, err := p.or()
	if err != nil {
		return nil, nil, fmt.Errorf("metric math %q: %w", expr, err)
	}
	p.space()
	if p.i != len(p.s) {
		return nil, nil, fmt.Errorf("metric math %q: unexpected %q", expr, p.s[p.i:])
	}
	return e, p.ids, nil
}

type parser struct {
	s   string
	i   int
	ids []string
}

func (p *parser) space() {
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
}

// eat consumes tok (case-insensitively for words) when it comes next.
func (p *parser) eat(tok string) bool {
	p.space()
	if strings.HasPrefix(strings.ToUpper(p.s[p.i:]), strings.ToUpper(tok)) {
		end := p.i + len(tok)
		if unicode.IsLetter(rune(tok[0])) && end < len(p.s) && (unicode.IsLetter(rune(p.s[end])) || unicode.IsDigit(rune(p.s[end])) || p.s[end] == '_') {
			return false
		}
		p.i = end
		return true
	}
	return false
}

func bin(a, b Expr, f func(x, y float64) float64) Expr {
	return func(v map[string]float64) (float64, bool) {
		x, ok1 := a(v)
		y, ok2 := b(v)
		if !ok1 || !ok2 {
			return 0, false
		}
		return f(x, y), true
	}
}

func truth(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func (p *parser) or() (Expr, error) {
	l, err := p.and()
	for err == nil && (p.eat("||") || p.eat("OR")) {
		var r Expr
		if r, err = p.and(); err == nil {
			l = bin(l, r, func(x, y float64) float64 { return truth(x != 0 || y != 0) })
		}
	}
	return l, err
}

func (p *parser) and() (Expr, error) {
	l, err := p.cmp()
	for err == nil && (p.eat("&&") || p.eat("AND")) {
		var r Expr
		if r, err = p.cmp(); err == nil {
			l = bin(l, r, func(x, y float64) float64 { return truth(x != 0 && y != 0) })
		}
	}
	return l, err
}

func (p *parser) cmp() (Expr, error) {
	l, err := p.sum()
	if err != nil {
		return nil, err
	}
	for _, op := range []string{">=", "<=", "==", "!=", ">", "<"} {
		if p.eat(op) {
			r, err := p.sum()
			if err != nil {
				return nil, err
			}
			f := map[string]func(x, y float64) bool{">=": func(x, y float64) bool { return x >= y }, "<=": func(x, y float64) bool { return x <= y },
				"==": func(x, y float64) bool { return x == y }, "!=": func(x, y float64) bool { return x != y },
				">": func(x, y float64) bool { return x > y }, "<": func(x, y float64) bool { return x < y }}[op]
			return bin(l, r, func(x, y float64) float64 { return truth(f(x, y)) }), nil
		}
	}
	return l, nil
}

func (p *parser) sum() (Expr, error) {
	l, err := p.product()
	for err == nil {
		switch {
		case p.eat("+"):
			var r Expr
			if r, err = p.product(); err == nil {
				l = bin(l, r, func(x, y float64) float64 { return x + y })
			}
		case p.eat("-"):
			var r Expr
			if r, err = p.product(); err == nil {
				l = bin(l, r, func(x, y float64) float64 { return x - y })
			}
		default:
			return l, nil
		}
	}
	return l, err
}

func (p *parser) product() (Expr, error) {
	l, err := p.unary()
	for err == nil {
		switch {
		case p.eat("*"):
			var r Expr
			if r, err = p.unary(); err == nil {
				l = bin(l, r, func(x, y float64) float64 { return x * y })
			}
		case p.eat("/"):
			var r Expr
			if r, err = p.unary(); err == nil {
				// A division by zero gives no data point, as in CloudWatch.
				ll, rr := l, r
				l = func(v map[string]float64) (float64, bool) {
					x, ok1 := ll(v)
					y, ok2 := rr(v)
					if !ok1 || !ok2 || y == 0 {
						return 0, false
					}
					return x / y, true
				}
			}
		default:
			return l, nil
		}
	}
	return l, err
}

func (p *parser) unary() (Expr, error) {
	if p.eat("!") || p.eat("NOT") {
		e, err := p.unary()
		if err != nil {
			return nil, err
		}
		return func(v map[string]float64) (float64, bool) { x, ok := e(v); return truth(x == 0), ok }, nil
	}
	if p.eat("-") {
		e, err := p.unary()
		if err != nil {
			return nil, err
		}
		return func(v map[string]float64) (float64, bool) { x, ok := e(v); return -x, ok }, nil
	}
	return p.atom()
}

// atom is a parenthesised expression, a number, a call of one of
// functions or a metric id.
func (p *parser) atom() (Expr, error) {
	p.space()
	if p.eat("(") {
		return p.parenthesised()
	}
	word := p.word()
	if word == "" {
		return nil, fmt.Errorf("expected a value at %q", p.s[p.i:])
	}
	if n, err := strconv.ParseFloat(word, 64); err == nil {
		return func(map[string]float64) (float64, bool) { return n, true }, nil
	}
	p.space()
	if p.i < len(p.s) && p.s[p.i] == '(' {
		return p.call(word)
	}
	return p.metric(word)
}

// parenthesised is the rest of "(" expression ")".
func (p *parser) parenthesised() (Expr, error) {
	e, err := p.or()
	if err != nil {
		return nil, err
	}
	if !p.eat(")") {
		return nil, fmt.Errorf("missing )")
	}
	return e, nil
}

// word consumes the letters, digits, '_' and '.' that come next: a
// number, a function's name or a metric id.
func (p *parser) word() string {
	start := p.i
	for p.i < len(p.s) && isWordByte(p.s[p.i]) {
		p.i++
	}
	return p.s[start:p.i]
}

func isWordByte(c byte) bool {
	return unicode.IsLetter(rune(c)) || unicode.IsDigit(rune(c)) || c == '_' || c == '.'
}

// functions are the metric math functions localcloud evaluates, by upper-case
// name, each building its call from the parsed arguments.
var functions = map[string]func(args []Expr) (Expr, error){
	"IF":   ifCall,
	"FILL": fillCall,
}

// call is name(args…), p at the "(".
func (p *parser) call(name string) (Expr, error) {
	build, ok := functions[strings.ToUpper(name)]
	if !ok {
		return nil, fmt.Errorf("function %s is not evaluated by localcloud (IF and FILL only)", name)
	}
	p.i++
	args, err := p.args()
	if err != nil {
		return nil, err
	}
	return build(args)
}

// args are a call's comma-separated arguments up to and with its ")".
func (p *parser) args() ([]Expr, error) {
	var args []Expr
	for {
		e, err := p.or()
		if err != nil {
			return nil, err
		}
		args = append(args, e)
		if p.eat(")") {
			return args, nil
		}
		if !p.eat(",") {
			return nil, fmt.Errorf("IF: expected , or )")
		}
	}
}

// fillCall is FILL(m, value): m's value, or value where m has none (a
// missing data point); the value is a number here.
func fillCall(args []Expr) (Expr, error) {
	if len(args) != 2 {
		return nil, fmt.Errorf("FILL takes 2 arguments, got %d", len(args))
	}
	fill, ok := args[1](nil)
	if !ok {
		return nil, fmt.Errorf("FILL: the value must be a number here")
	}
	m := args[0]
	return func(v map[string]float64) (float64, bool) {
		if x, ok := m(v); ok {
			return x, true
		}
		return fill, true
	}, nil
}

// ifCall is IF(condition, then, else): missing where the condition is.
func ifCall(args []Expr) (Expr, error) {
	if len(args) != 3 {
		return nil, fmt.Errorf("IF takes 3 arguments here, got %d", len(args))
	}
	c, t, f := args[0], args[1], args[2]
	return func(v map[string]float64) (float64, bool) {
		x, ok := c(v)
		if !ok {
			return 0, false
		}
		if x != 0 {
			return t(v)
		}
		return f(v)
	}, nil
}

// metric is the value of the metric id word, which starts with a
// lower-case letter.
func (p *parser) metric(word string) (Expr, error) {
	if !unicode.IsLower(rune(word[0])) {
		return nil, fmt.Errorf("%q is not a metric id (ids start with a lower-case letter)", word)
	}
	p.ids = append(p.ids, word)
	return func(v map[string]float64) (float64, bool) { x, ok := v[word]; return x, ok }, nil
}
