package engine

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"text/template"
	"time"

	"github.com/Masterminds/sprig/v3"
)

// allowedSprig lists the sprig functions templates may call: those whose
// output depends on their inputs alone (DESIGN.md §3: the same plan renders
// the same args on every reconcile and every replica). Left out on purpose:
// env and expandenv (controller environment), getHostByName (network), now
// and ago (they read the clock: use .Time), dateInZone and htmlDateInZone
// (their output depends on the controller's time-zone database), random and
// uuid generators, and crypto generators. date,
// htmlDate, toDate, durationRound, keys, values and uniq are replaced by
// deterministic versions (see funcMap).
var allowedSprig = []string{
	// strings
	"abbrev", "abbrevboth", "trunc", "trim", "upper", "lower", "title", "untitle",
	"substr", "repeat", "trimAll", "trimSuffix", "trimPrefix", "nospace", "initials",
	"swapcase", "snakecase", "camelcase", "kebabcase", "wrap", "wrapWith", "contains",
	"hasPrefix", "hasSuffix", "quote", "squote", "cat", "indent", "nindent", "replace",
	"plural", "sha1sum", "sha256sum", "adler32sum", "toString", "b64enc", "b64dec",
	"b32enc", "b32dec", "split", "splitList", "splitn", "toStrings", "join", "sortAlpha",
	"regexMatch", "regexFindAll", "regexFind", "regexReplaceAll", "regexReplaceAllLiteral",
	"regexSplit", "regexQuoteMeta",
	// numbers and conversion
	"atoi", "int", "int64", "float64", "toDecimal", "add", "add1", "sub", "mul", "div",
	"mod", "max", "min", "floor", "ceil", "round", "seq", "until", "untilStep",
	// dates computed from a given time, in UTC (never the clock)
	"date", "toDate", "unixEpoch", "duration", "durationRound", "htmlDate",
	// defaults and flow
	"default", "empty", "coalesce", "all", "any", "ternary", "fail", "required",
	"toJson", "toPrettyJson", "toRawJson", "fromJson", "kindOf", "kindIs", "typeOf",
	"typeIs", "deepEqual",
	// lists and dicts
	"list", "first", "rest", "last", "initial", "append", "prepend", "concat", "reverse",
	"uniq", "without", "has", "compact", "slice", "chunk", "dict", "get", "set", "unset",
	"hasKey", "pluck", "keys", "pick", "omit", "values", "dig", "merge", "mergeOverwrite",
}

// funcMap is the function map shared by every template: the allow-listed
// sprig functions, with date, htmlDate, toDate and durationRound in UTC and
// never reading the clock, keys and values in key order, uniq in linear
// time, and repeat, seq, until and untilStep bounded.
var funcMap = func() template.FuncMap {
	all := sprig.TxtFuncMap()
	fm := template.FuncMap{}
	for _, name := range allowedSprig {
		if f, ok := all[name]; ok {
			fm[name] = f
		}
	}
	for name, f := range map[string]any{
		"date": date, "htmlDate": htmlDate, "toDate": toDate, "durationRound": durationRound(all),
		"keys": keys, "values": values, "uniq": uniq,
	} {
		fm[name] = f
	}
	boundCounts(fm, all)
	return fm
}()

// boundCounts replaces in fm the functions whose result size is set by a
// count with versions that refuse, before allocating, what would pass
// MaxRenderedBytes (repeat) or MaxListLength (seq, until, untilStep).
func boundCounts(fm template.FuncMap, all template.FuncMap) {
	repeat := all["repeat"].(func(int, string) string)
	fm["repeat"] = func(count int, s string) (string, error) {
		if count > 0 && len(s) > 0 && count > MaxRenderedBytes/len(s) {
			return "", fmt.Errorf("%d × %d bytes is more than a template may produce (%d bytes)", count, len(s), MaxRenderedBytes)
		}
		return repeat(count, s), nil
	}
	until := all["until"].(func(int) []int)
	fm["until"] = func(n int) ([]int, error) {
		if n > MaxListLength || n < -MaxListLength {
			return nil, fmt.Errorf("%d elements is more than a template may build (%d)", n, MaxListLength)
		}
		return until(n), nil
	}
	untilStep := all["untilStep"].(func(int, int, int) []int)
	fm["untilStep"] = func(start, stop, step int) ([]int, error) {
		if step != 0 && tooLong(start, stop, step) {
			return nil, fmt.Errorf("more elements than a template may build (%d)", MaxListLength)
		}
		return untilStep(start, stop, step), nil
	}
	seq := all["seq"].(func(...int) string)
	fm["seq"] = func(params ...int) (string, error) {
		start, end, step := 1, 0, 1
		switch len(params) {
		case 1:
			end = params[0]
		case 2:
			start, end = params[0], params[1]
		case 3:
			start, step, end = params[0], params[1], params[2]
		}
		if step == 0 {
			step = 1
		}
		if tooLong(start, end, step) {
			return "", fmt.Errorf("more elements than a template may build (%d)", MaxListLength)
		}
		return seq(params...), nil
	}
}

// tooLong reports whether counting from start to stop by step (≠ 0) would
// build more than MaxListLength elements; computed in float64 so that
// extreme values cannot overflow into a small count.
func tooLong(start, stop, step int) bool {
	return math.Abs((float64(stop)-float64(start))/float64(step)) > MaxListLength
}

// asTime converts what the date functions take — a time.Time or
// *time.Time, Unix seconds (int, int32, int64), or an RFC 3339 string such
// as .Time — to a time in UTC. sprig's take the clock for anything else
// (.Time included); this is an error instead.
func asTime(v any) (time.Time, error) {
	switch t := v.(type) {
	case time.Time:
		return t.UTC(), nil
	case *time.Time:
		if t != nil {
			return t.UTC(), nil
		}
	case int:
		return time.Unix(int64(t), 0).UTC(), nil
	case int32:
		return time.Unix(int64(t), 0).UTC(), nil
	case int64:
		return time.Unix(t, 0).UTC(), nil
	case string:
		p, err := time.Parse(time.RFC3339, t)
		if err != nil {
			return time.Time{}, err
		}
		return p.UTC(), nil
	}
	return time.Time{}, fmt.Errorf("%T is not a time (a time, Unix seconds or an RFC 3339 string such as .Time)", v)
}

// date formats t (see asTime) with layout, in UTC: {{ date "2006-01-02" .Time }}.
// sprig's formats in the controller's time.Local and reads the clock for a
// string.
func date(layout string, t any) (string, error) {
	u, err := asTime(t)
	if err != nil {
		return "", err
	}
	return u.Format(layout), nil
}

// htmlDate is date "2006-01-02".
func htmlDate(t any) (string, error) {
	u, err := asTime(t)
	if err != nil {
		return "", err
	}
	return u.Format("2006-01-02"), nil
}

// toDate parses s with layout; a time without a zone is in UTC (sprig's
// takes the controller's time.Local). A string that does not parse is an
// error (sprig's returns the zero time).
func toDate(layout, s string) (time.Time, error) {
	t, err := time.ParseInLocation(layout, s, time.UTC)
	if err != nil {
		return time.Time{}, err
	}
	return t.UTC(), nil
}

// durationRound returns sprig's durationRound, refusing a time: sprig's
// rounds the time elapsed since it, which reads the clock.
func durationRound(all template.FuncMap) func(any) (string, error) {
	round := all["durationRound"].(func(any) string)
	return func(d any) (string, error) {
		switch d.(type) {
		case time.Time, *time.Time:
			return "", fmt.Errorf("a time would be measured from the clock; subtract it from another time first, or pass a duration")
		}
		return round(d), nil
	}
}

// keys returns the keys of the dicts, sorted (sprig's are in Go's random
// map order); a key in several dicts appears once per dict, as in sprig.
func keys(dicts ...map[string]any) []string {
	k := []string{}
	for _, d := range dicts {
		for key := range d {
			k = append(k, key)
		}
	}
	sort.Strings(k)
	return k
}

// values returns the values of dict in the order of its sorted keys
// (sprig's are in Go's random map order).
func values(dict map[string]any) []any {
	v := make([]any, 0, len(dict))
	for _, k := range sortedKeys(dict) {
		v = append(v, dict[k])
	}
	return v
}

// uniq returns the elements of list without repeats, in order, equal as
// reflect.DeepEqual — as sprig's, which compares every pair (seconds for
// 10,000 numbers, in one call nothing can interrupt). Comparable elements
// are looked up in a map; lists and dicts are grouped by their printed form
// and compared within a group.
func uniq(list any) ([]any, error) {
	l := reflect.ValueOf(list)
	if k := l.Kind(); k != reflect.Slice && k != reflect.Array {
		return nil, fmt.Errorf("cannot find uniq on type %s", l.Type())
	}
	out := []any{}
	seen := map[any]bool{}
	groups := map[string][]any{}
	for i := range l.Len() {
		e := l.Index(i).Interface()
		if e == nil || reflect.ValueOf(e).Comparable() {
			if !seen[e] {
				seen[e] = true
				out = append(out, e)
			}
			continue
		}
		key := fmt.Sprintf("%#v", e)
		dup := false
		for _, o := range groups[key] {
			if reflect.DeepEqual(o, e) {
				dup = true
				break
			}
		}
		if !dup {
			groups[key] = append(groups[key], e)
			out = append(out, e)
		}
	}
	return out, nil
}
