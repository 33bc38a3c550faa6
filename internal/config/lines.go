package config

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// lineIndex knows, for a YAML document, the line of every field path
// ("agents[0].timeouts.request"), so that a problem found while decoding
// (which knows only a line) or while validating (which knows only a path)
// can name both.
type lineIndex struct {
	lines  map[string]int
	onLine map[int][]lineEntry
}

type lineEntry struct {
	path, key, tag, value string
}

func indexLines(doc *yaml.Node) *lineIndex {
	ix := &lineIndex{lines: map[string]int{}, onLine: map[int][]lineEntry{}}
	if len(doc.Content) > 0 {
		ix.walk("", doc.Content[0])
	}
	return ix
}

func (ix *lineIndex) walk(path string, n *yaml.Node) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			ix.add(p, k.Value, k.Line, v)
			ix.walk(p, v)
		}
	case yaml.SequenceNode:
		for i, v := range n.Content {
			p := path + "[" + strconv.Itoa(i) + "]"
			ix.add(p, "", v.Line, v)
			ix.walk(p, v)
		}
	}
}

func (ix *lineIndex) add(path, key string, line int, v *yaml.Node) {
	if _, ok := ix.lines[path]; !ok {
		ix.lines[path] = line
	}
	e := lineEntry{path: path, key: key, tag: v.Tag}
	if v.Kind == yaml.ScalarNode {
		e.value = v.Value
	}
	ix.onLine[v.Line] = append(ix.onLine[v.Line], e)
	if line != v.Line {
		ix.onLine[line] = append(ix.onLine[line], e)
	}
}

// lineOf is the line of path, or of its nearest ancestor in the file (a
// required field that is missing has no line of its own).
func (ix *lineIndex) lineOf(path string) int {
	for path != "" {
		if l, ok := ix.lines[path]; ok {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			return 0
		}
		path = path[:i]
	}
	return 0
}

var (
	linePrefix   = regexp.MustCompile(`^line (\d+): (.*)$`)
	unknownField = regexp.MustCompile(`^field (\S+) not found in type \S+$`)
	wrongType    = regexp.MustCompile("^cannot unmarshal (!!\\w+)(?: `(.*)`)? into (.+)$")
	quotedValue  = regexp.MustCompile(`got ("(?:[^"\\]|\\.)*")`)
)

// problem is one configuration problem, with the field path and line when
// they are known.
type problem struct {
	line int
	path string
	msg  string
}

func (p problem) String() string {
	s := p.msg
	if p.path != "" {
		s = p.path + ": " + s
	}
	if p.line > 0 {
		s = "line " + strconv.Itoa(p.line) + ": " + s
	}
	return s
}

// decodeError turns one of the YAML decoder's messages ("line 7: cannot
// unmarshal !!str `ten` into int") into a problem naming the field and
// saying what was wanted.
func (ix *lineIndex) decodeError(raw string) problem {
	m := linePrefix.FindStringSubmatch(raw)
	if m == nil {
		return problem{msg: raw}
	}
	line, _ := strconv.Atoi(m[1])
	msg := m[2]
	entries := ix.onLine[line]
	if f := unknownField.FindStringSubmatch(msg); f != nil {
		for _, e := range entries {
			if e.key == f[1] {
				return problem{line: line, path: e.path, msg: unknownFieldMessage(e.path)}
			}
		}
		return problem{line: line, path: f[1], msg: "unknown field"}
	}
	if t := wrongType.FindStringSubmatch(msg); t != nil {
		shown := strings.TrimSuffix(t[2], "...")
		for _, e := range entries {
			if e.tag == t[1] && strings.HasPrefix(e.value, shown) {
				return problem{line: line, path: e.path, msg: fmt.Sprintf("want %s, got %s", describeType(t[3]), describeNode(e))}
			}
		}
		return problem{line: line, msg: fmt.Sprintf("want %s, got a %s", describeType(t[3]), strings.TrimPrefix(t[1], "!!"))}
	}
	// A decoder of our own (durations) says "got <quoted value>".
	if q := quotedValue.FindStringSubmatch(msg); q != nil {
		if v, err := strconv.Unquote(q[1]); err == nil {
			for _, e := range entries {
				if e.value == v {
					return problem{line: line, path: e.path, msg: msg}
				}
			}
		}
	}
	if len(entries) == 1 {
		return problem{line: line, path: entries[0].path, msg: msg}
	}
	return problem{line: line, msg: msg}
}

func describeNode(e lineEntry) string {
	switch e.tag {
	case "!!map":
		return "a mapping"
	case "!!seq":
		return "a list"
	}
	return strconv.Quote(e.value)
}

func describeType(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	case strings.HasPrefix(goType, "map["), strings.Contains(goType, "."):
		return "a mapping"
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"):
		return "an integer"
	case strings.HasPrefix(goType, "float"):
		return "a number"
	case goType == "bool":
		return "true or false"
	case goType == "string":
		return "a string"
	}
	return goType
}

// unknownFieldMessage names the fields the section does have, so a typo
// is one look away from its fix.
func unknownFieldMessage(path string) string {
	parent := ""
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		parent = path[:i]
	}
	known := fieldsAt(reflect.TypeFor[Config](), parent)
	if len(known) == 0 {
		return "unknown field"
	}
	return "unknown field; this section has " + strings.Join(known, ", ")
}

// fieldsAt lists the YAML field names of the struct found at path below t.
func fieldsAt(t reflect.Type, path string) []string {
	for _, seg := range splitPath(path) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch {
		case seg.index && (t.Kind() == reflect.Slice || t.Kind() == reflect.Map):
			t = t.Elem()
		case !seg.index && t.Kind() == reflect.Map:
			t = t.Elem()
		case !seg.index && t.Kind() == reflect.Struct:
			f, ok := yamlField(t, seg.name)
			if !ok {
				return nil
			}
			t = f
		default:
			return nil
		}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var names []string
	collectFields(t, &names)
	slices.Sort(names)
	return names
}

type pathSeg struct {
	name  string
	index bool
}

// splitPath splits "agents[0].timeouts" into agents, [0], timeouts.
func splitPath(path string) []pathSeg {
	var segs []pathSeg
	for part := range strings.SplitSeq(path, ".") {
		if part == "" {
			continue
		}
		name, rest, _ := strings.Cut(part, "[")
		if name != "" {
			segs = append(segs, pathSeg{name: name})
		}
		for ; rest != ""; _, rest, _ = strings.Cut(rest, "[") {
			segs = append(segs, pathSeg{index: true})
		}
	}
	return segs
}

func yamlField(t reflect.Type, name string) (reflect.Type, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if strings.Contains(opts, "inline") {
			if ft, ok := yamlField(f.Type, name); ok {
				return ft, true
			}
			continue
		}
		if tag == name {
			return f.Type, true
		}
	}
	return nil, false
}

func collectFields(t reflect.Type, names *[]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case strings.Contains(opts, "inline"):
			collectFields(f.Type, names)
		case tag != "" && tag != "-":
			*names = append(*names, tag)
		}
	}
}

// Locate gives the problems errs describe ("field.path: reason", or
// Problems already located) the lines where those fields stand in the file
// the configuration was read from, and returns them all as Problems, or nil
// when there are none.
func (c *Config) Locate(errs ...error) error {
	ix := c.lines
	if ix == nil {
		ix = &lineIndex{}
	}
	var located []problem
	var rest []error
	for _, err := range errs {
		if ps, ok := errors.AsType[Problems](err); ok {
			located = append(located, ps...)
		} else if err != nil {
			rest = append(rest, err)
		}
	}
	return ix.join(located, errors.Join(rest...))
}

// join gives every problem its line and path, drops a validation problem
// about a field that could not even be decoded, and returns them all as
// one error, in the order of the file.
func (ix *lineIndex) join(decoded []problem, validation error) error {
	all := slices.Clone(decoded)
	bad := map[string]bool{}
	for _, p := range decoded {
		bad[p.path] = true
	}
	for _, msg := range leafMessages(validation) {
		path, reason, ok := strings.Cut(msg, ": ")
		if !ok || strings.ContainsAny(path, " \t") {
			all = append(all, problem{msg: msg})
			continue
		}
		if bad[path] {
			continue
		}
		all = append(all, problem{line: ix.lineOf(path), path: path, msg: reason})
	}
	if len(all) == 0 {
		return nil
	}
	slices.SortStableFunc(all, func(a, b problem) int { return a.line - b.line })
	return Problems(all)
}

// Problems are every problem found in one configuration.
type Problems []problem

func (ps Problems) Error() string {
	if len(ps) == 1 {
		return ps[0].String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems:", len(ps))
	for _, p := range ps {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

func leafMessages(err error) []string {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []string
		for _, e := range j.Unwrap() {
			out = append(out, leafMessages(e)...)
		}
		return out
	}
	return strings.Split(err.Error(), "\n")
}
