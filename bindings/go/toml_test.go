package ctxpack_test

// A reader for the TOML subset the conformance vectors use (shared/spec/08 §2): tables,
// arrays of tables (nested under the latest element), key = value with basic and
// literal strings, integers, floats, booleans, offset date-times (seconds optional),
// arrays (possibly over several lines) and inline tables. Comments are dropped. It is
// not a general TOML parser: enough to read the vectors without a dependency.

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

type table = map[string]interface{}

func parseTOML(text string) (table, error) {
	root := table{}
	current := root
	lines := strings.Split(text, "\n")
	for n := 0; n < len(lines); n++ {
		line := strings.TrimSpace(lines[n])
		if line == "" || line[0] == '#' {
			continue
		}
		fail := func(err error) (table, error) { return nil, fmt.Errorf("line %d: %v", n+1, err) }
		switch {
		case strings.HasPrefix(line, "[["):
			end := strings.Index(line, "]]")
			if end < 0 {
				return fail(fmt.Errorf("unterminated header"))
			}
			path := splitKey(line[2:end])
			parent, err := descend(root, path[:len(path)-1])
			if err != nil {
				return fail(err)
			}
			last := path[len(path)-1]
			arr, _ := parent[last].([]table)
			current = table{}
			parent[last] = append(arr, current)
		case line[0] == '[':
			end := strings.IndexByte(line, ']')
			if end < 0 {
				return fail(fmt.Errorf("unterminated header"))
			}
			t, err := descend(root, splitKey(line[1:end]))
			if err != nil {
				return fail(err)
			}
			current = t
		default:
			eq := strings.IndexByte(line, '=')
			if eq < 0 {
				return fail(fmt.Errorf("expected key = value"))
			}
			// A value may continue over the next lines (multi-line arrays).
			src := line[eq+1:]
			for open := bracketDepth(src); open > 0 && n+1 < len(lines); open = bracketDepth(src) {
				n++
				src += "\n" + lines[n]
			}
			p := &valueParser{s: src}
			v, err := p.value()
			if err != nil {
				return fail(err)
			}
			if rest := strings.TrimSpace(p.s[p.i:]); rest != "" && rest[0] != '#' {
				return fail(fmt.Errorf("trailing text %q", rest))
			}
			path := splitKey(line[:eq])
			t, err := descend(current, path[:len(path)-1])
			if err != nil {
				return fail(err)
			}
			t[path[len(path)-1]] = v
		}
	}
	return root, nil
}

// descend walks a dotted path from t, creating tables; an array of tables stands for
// its latest element.
func descend(t table, path []string) (table, error) {
	for _, k := range path {
		switch v := t[k].(type) {
		case nil:
			next := table{}
			t[k] = next
			t = next
		case table:
			t = v
		case []table:
			t = v[len(v)-1]
		default:
			return nil, fmt.Errorf("key %q is not a table", k)
		}
	}
	return t, nil
}

func splitKey(s string) []string {
	var parts []string
	for _, p := range strings.Split(s, ".") {
		parts = append(parts, strings.Trim(strings.TrimSpace(p), `"'`))
	}
	return parts
}

// bracketDepth counts unclosed [ and { outside strings and comments.
func bracketDepth(s string) int {
	depth := 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' && quote == '"' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
		}
	}
	return depth
}

type valueParser struct {
	s string
	i int
}

var (
	dateTimeRE = regexp.MustCompile(`^(\d{4}-\d\d-\d\dT\d\d:\d\d)(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)`)
	numberRE   = regexp.MustCompile(`^[+-]?(inf|nan|[0-9_]+(\.[0-9_]+)?([eE][+-]?[0-9_]+)?)`)
)

func (p *valueParser) skip() {
	for p.i < len(p.s) {
		switch c := p.s[p.i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.i++
		case c == '#':
			for p.i < len(p.s) && p.s[p.i] != '\n' {
				p.i++
			}
		default:
			return
		}
	}
}

func (p *valueParser) value() (interface{}, error) {
	p.skip()
	if p.i >= len(p.s) {
		return nil, fmt.Errorf("missing value")
	}
	rest := p.s[p.i:]
	switch {
	case rest[0] == '"' || rest[0] == '\'':
		return p.str()
	case rest[0] == '[':
		return p.array()
	case rest[0] == '{':
		return p.inlineTable()
	case strings.HasPrefix(rest, "true"):
		p.i += 4
		return true, nil
	case strings.HasPrefix(rest, "false"):
		p.i += 5
		return false, nil
	}
	if m := dateTimeRE.FindStringSubmatch(rest); m != nil {
		p.i += len(m[0])
		secs := m[2]
		if secs == "" {
			secs = ":00" // TOML 1.1: seconds may be omitted
		}
		return time.Parse(time.RFC3339Nano, m[1]+secs+m[4])
	}
	if m := numberRE.FindString(rest); m != "" {
		p.i += len(m)
		clean := strings.ReplaceAll(m, "_", "")
		if strings.ContainsAny(clean, ".eEin") {
			return strconv.ParseFloat(clean, 64)
		}
		return strconv.ParseInt(clean, 10, 64)
	}
	return nil, fmt.Errorf("cannot read value at %q", rest)
}

func (p *valueParser) str() (string, error) {
	quote := p.s[p.i]
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch {
		case c == quote:
			return b.String(), nil
		case c == '\\' && quote == '"':
			if p.i >= len(p.s) {
				return "", fmt.Errorf("unterminated escape")
			}
			e := p.s[p.i]
			p.i++
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '"', '\\':
				b.WriteByte(e)
			case 'u', 'U':
				width := 4
				if e == 'U' {
					width = 8
				}
				if p.i+width > len(p.s) {
					return "", fmt.Errorf("short unicode escape")
				}
				r, err := strconv.ParseUint(p.s[p.i:p.i+width], 16, 32)
				if err != nil {
					return "", err
				}
				b.WriteRune(rune(r))
				p.i += width
			default:
				return "", fmt.Errorf("unknown escape \\%c", e)
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", fmt.Errorf("unterminated string")
}

func (p *valueParser) array() ([]interface{}, error) {
	p.i++ // [
	arr := []interface{}{}
	for {
		p.skip()
		if p.i < len(p.s) && p.s[p.i] == ']' {
			p.i++
			return arr, nil
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		arr = append(arr, v)
		p.skip()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
		}
	}
}

func (p *valueParser) inlineTable() (table, error) {
	p.i++ // {
	t := table{}
	for {
		p.skip()
		if p.i >= len(p.s) {
			return nil, fmt.Errorf("unterminated inline table")
		}
		if p.s[p.i] == '}' {
			p.i++
			return t, nil
		}
		var key string
		if c := p.s[p.i]; c == '"' || c == '\'' {
			k, err := p.str()
			if err != nil {
				return nil, err
			}
			key = k
		} else {
			start := p.i
			for p.i < len(p.s) && p.s[p.i] != '=' && p.s[p.i] != ' ' {
				p.i++
			}
			key = p.s[start:p.i]
		}
		p.skip()
		if p.i >= len(p.s) || p.s[p.i] != '=' {
			return nil, fmt.Errorf("expected = in inline table")
		}
		p.i++
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		t[key] = v
		p.skip()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
		}
	}
}
