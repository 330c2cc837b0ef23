package dynamofake

import (
	"fmt"
	"math/big"
	"reflect"
	"strings"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// evalCondition evaluates a DynamoDB condition expression on cur (nil: no item), with the
// grammar the SDK's expression builder writes: attribute_exists(#n), attribute_not_exists(#n),
// comparisons (= <> < <= > >=) between #names and :values, NOT, AND, OR and parentheses.
// Numbers compare as numbers, strings as strings; a missing attribute makes a comparison false.
func evalCondition(expr string, names map[string]string, values map[string]types.AttributeValue, cur map[string]types.AttributeValue) (bool, error) {
	p := &condParser{toks: tokenize(expr), names: names, values: values, cur: cur}
	ok, err := p.or()
	if err == nil && p.pos != len(p.toks) {
		err = fmt.Errorf("unexpected %q", p.toks[p.pos])
	}
	if err != nil {
		return false, fmt.Errorf("dynamofake: condition %q: %w", expr, err)
	}
	return ok, nil
}

func tokenize(s string) []string {
	var toks []string
	for i := 0; i < len(s); {
		c := rune(s[i])
		switch {
		case unicode.IsSpace(c):
			i++
		case c == '(' || c == ')' || c == ',':
			toks = append(toks, string(c))
			i++
		case strings.ContainsRune("<>=", c):
			j := i + 1
			for j < len(s) && strings.ContainsRune("<>=", rune(s[j])) {
				j++
			}
			toks = append(toks, s[i:j])
			i = j
		default:
			j := i
			for j < len(s) && !unicode.IsSpace(rune(s[j])) && !strings.ContainsRune("(),<>=", rune(s[j])) {
				j++
			}
			toks = append(toks, s[i:j])
			i = j
		}
	}
	return toks
}

type condParser struct {
	toks   []string
	pos    int
	names  map[string]string
	values map[string]types.AttributeValue
	cur    map[string]types.AttributeValue
}

func (p *condParser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return ""
}

func (p *condParser) next() string { t := p.peek(); p.pos++; return t }

func (p *condParser) expect(t string) error {
	if got := p.next(); got != t {
		return fmt.Errorf("want %q, got %q", t, got)
	}
	return nil
}

func (p *condParser) or() (bool, error) {
	v, err := p.and()
	for err == nil && strings.EqualFold(p.peek(), "OR") {
		p.next()
		var r bool
		r, err = p.and()
		v = v || r
	}
	return v, err
}

func (p *condParser) and() (bool, error) {
	v, err := p.not()
	for err == nil && strings.EqualFold(p.peek(), "AND") {
		p.next()
		var r bool
		r, err = p.not()
		v = v && r
	}
	return v, err
}

func (p *condParser) not() (bool, error) {
	if strings.EqualFold(p.peek(), "NOT") {
		p.next()
		v, err := p.not()
		return !v, err
	}
	return p.primary()
}

func (p *condParser) primary() (bool, error) {
	switch t := p.peek(); {
	case t == "(":
		p.next()
		v, err := p.or()
		if err != nil {
			return false, err
		}
		return v, p.expect(")")
	case t == "attribute_exists" || t == "attribute_not_exists":
		p.next()
		if err := p.expect("("); err != nil {
			return false, err
		}
		name, err := p.name(p.next())
		if err != nil {
			return false, err
		}
		if err := p.expect(")"); err != nil {
			return false, err
		}
		_, ok := p.cur[name]
		return ok == (t == "attribute_exists"), nil
	}
	left, lok, err := p.operand()
	if err != nil {
		return false, err
	}
	op := p.next()
	right, rok, err := p.operand()
	if err != nil {
		return false, err
	}
	if !lok || !rok {
		return op == "<>", nil
	}
	return compare(left, op, right)
}

// operand returns the value of a #name (from the current item) or a :value, and whether it
// exists.
func (p *condParser) operand() (types.AttributeValue, bool, error) {
	t := p.next()
	switch {
	case strings.HasPrefix(t, ":"):
		v, ok := p.values[t]
		if !ok {
			return nil, false, fmt.Errorf("no value %s", t)
		}
		return v, true, nil
	case strings.HasPrefix(t, "#"):
		name, err := p.name(t)
		if err != nil {
			return nil, false, err
		}
		v, ok := p.cur[name]
		return v, ok, nil
	}
	return nil, false, fmt.Errorf("unexpected operand %q", t)
}

func (p *condParser) name(t string) (string, error) {
	if n, ok := p.names[t]; ok {
		return n, nil
	}
	return "", fmt.Errorf("no name %s", t)
}

func compare(a types.AttributeValue, op string, b types.AttributeValue) (bool, error) {
	var c int
	switch x := a.(type) {
	case *types.AttributeValueMemberN:
		y, ok := b.(*types.AttributeValueMemberN)
		if !ok {
			return op == "<>", nil
		}
		xf, ok1 := new(big.Float).SetString(x.Value)
		yf, ok2 := new(big.Float).SetString(y.Value)
		if !ok1 || !ok2 {
			return false, fmt.Errorf("bad number %q or %q", x.Value, y.Value)
		}
		c = xf.Cmp(yf)
	case *types.AttributeValueMemberS:
		y, ok := b.(*types.AttributeValueMemberS)
		if !ok {
			return op == "<>", nil
		}
		c = strings.Compare(x.Value, y.Value)
	default:
		eq := reflect.DeepEqual(a, b)
		switch op {
		case "=":
			return eq, nil
		case "<>":
			return !eq, nil
		}
		return false, fmt.Errorf("cannot order %T", a)
	}
	switch op {
	case "=":
		return c == 0, nil
	case "<>":
		return c != 0, nil
	case "<":
		return c < 0, nil
	case "<=":
		return c <= 0, nil
	case ">":
		return c > 0, nil
	case ">=":
		return c >= 0, nil
	}
	return false, fmt.Errorf("unknown operator %q", op)
}
