package engine

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"text/template"
	"time"
	"unicode/utf8"

	"github.com/Masterminds/sprig/v3"
)

// allowedSprig lists the sprig functions templates may call: those whose
// output depends on their inputs alone (the same plan renders the same args
// on every reconcile and every replica: the engine contract,
// docs/architecture.md). Left out on purpose:
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
// sprig functions and text/template's print, printf, println, html, js and
// urlquery, with
//   - date, htmlDate, toDate and durationRound in UTC and never reading the
//     clock, keys and values in key order, uniq in linear time;
//   - the functions that build a large result from small arguments (repeat,
//     seq, until, untilStep, indent, nindent, replace, join, wrapWith,
//     split, splitn, splitList, the regexReplace functions, printf, and the
//     ones that concatenate their arguments) refusing before they allocate;
//   - every function whose result may be large (a string, list or dict)
//     refusing a result larger than MaxValueSize, so that no loop can double
//     a value, nest a list in itself or build a cycle until the controller
//     runs out of memory.
var funcMap = func() template.FuncMap {
	all := sprig.TxtFuncMap()
	fm := template.FuncMap{}
	for _, name := range allowedSprig {
		if f, ok := all[name]; ok {
			fm[name] = f
		}
	}
	for name, f := range map[string]any{
		// text/template's own, so that their results are bounded too.
		"print": fmt.Sprint, "printf": printf, "println": fmt.Sprintln,
		"html": template.HTMLEscaper, "js": template.JSEscaper, "urlquery": template.URLQueryEscaper,
		// deterministic replacements
		"date": date, "htmlDate": htmlDate, "toDate": toDate, "durationRound": durationRound(all),
		"keys": keys, "values": values, "uniq": uniq,
	} {
		fm[name] = f
	}
	boundCounts(fm, all)
	for name, f := range fm {
		fm[name] = boundResult(f, concatenating[name])
	}
	return fm
}()

// concatenating are the functions whose result is about as large as all
// their arguments together: their arguments are measured before the call.
var concatenating = map[string]bool{
	"cat": true, "concat": true, "keys": true, "quote": true, "squote": true,
	"print": true, "printf": true, "println": true, "html": true, "js": true, "urlquery": true,
}

// boundCounts replaces in fm the functions whose result size is set by a
// count or by how often a pattern occurs, with versions that compute that
// size and refuse, before allocating, what would pass MaxRenderedBytes
// (repeat), MaxListLength (seq, until, untilStep, split, splitn, splitList)
// or MaxValueSize.
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
	indent := all["indent"].(func(int, string) string)
	fm["indent"] = func(spaces int, s string) (string, error) {
		if err := checkIndent(spaces, s); err != nil {
			return "", err
		}
		return indent(spaces, s), nil
	}
	nindent := all["nindent"].(func(int, string) string)
	fm["nindent"] = func(spaces int, s string) (string, error) {
		if err := checkIndent(spaces, s); err != nil {
			return "", err
		}
		return nindent(spaces, s), nil
	}
	replace := all["replace"].(func(string, string, string) string)
	fm["replace"] = func(old, new, s string) (string, error) {
		if len(new) > len(old) {
			if err := checkGrowth(len(s), strings.Count(s, old), len(new)-len(old)); err != nil {
				return "", err
			}
		}
		return replace(old, new, s), nil
	}
	join := all["join"].(func(string, any) string)
	fm["join"] = func(sep string, list any) (string, error) {
		if err := checkGrowth(0, listLen(list), len(sep)); err != nil {
			return "", err
		}
		return join(sep, list), nil
	}
	wrapWith := all["wrapWith"].(func(int, string, string) string)
	fm["wrapWith"] = func(width int, sep, s string) (string, error) {
		// A separator replaces a space or follows at least width bytes.
		if err := checkGrowth(len(s), strings.Count(s, " ")+len(s)/max(width, 1)+1, len(sep)); err != nil {
			return "", err
		}
		return wrapWith(width, sep, s), nil
	}
	fm["regexReplaceAll"] = func(re, s, repl string) (string, error) {
		return regexReplace(re, s, repl, true)
	}
	fm["regexReplaceAllLiteral"] = func(re, s, repl string) (string, error) {
		return regexReplace(re, s, repl, false)
	}
	split := all["split"].(func(string, string) map[string]string)
	fm["split"] = func(sep, s string) (map[string]string, error) {
		if err := checkPieces(sep, s, -1); err != nil {
			return nil, err
		}
		return split(sep, s), nil
	}
	splitn := all["splitn"].(func(string, int, string) map[string]string)
	fm["splitn"] = func(sep string, n int, s string) (map[string]string, error) {
		if err := checkPieces(sep, s, n); err != nil {
			return nil, err
		}
		return splitn(sep, n, s), nil
	}
	splitList := all["splitList"].(func(string, string) []string)
	fm["splitList"] = func(sep, s string) ([]string, error) {
		if err := checkPieces(sep, s, -1); err != nil {
			return nil, err
		}
		return splitList(sep, s), nil
	}
}

// tooLong reports whether counting from start to stop by step (≠ 0) would
// build more than MaxListLength elements; computed in float64 so that
// extreme values cannot overflow into a small count.
func tooLong(start, stop, step int) bool {
	return math.Abs((float64(stop)-float64(start))/float64(step)) > MaxListLength
}

// checkGrowth refuses a result of base bytes plus times × each bytes when it
// would be larger than MaxValueSize (computed without overflow).
func checkGrowth(base, times, each int) error {
	if times > 0 && each > 0 && (times > (MaxValueSize-base)/each || base > MaxValueSize) {
		return fmt.Errorf("the result would be larger than a template value may be (%d bytes)", MaxValueSize)
	}
	return nil
}

// checkIndent refuses indenting each line of s by spaces when the result
// would be larger than MaxValueSize.
func checkIndent(spaces int, s string) error {
	return checkGrowth(len(s)+1, strings.Count(s, "\n")+1, spaces)
}

// checkPieces refuses splitting s at sep into more than MaxListLength
// pieces (n < 0: all of them).
func checkPieces(sep, s string, n int) error {
	pieces := strings.Count(s, sep) + 1
	if sep == "" {
		pieces = utf8.RuneCountInString(s) // one per rune
	}
	if n >= 0 && n < pieces {
		pieces = n
	}
	if pieces > MaxListLength {
		return fmt.Errorf("%d pieces is more than a template may build (%d)", pieces, MaxListLength)
	}
	return nil
}

// listLen is how many strings sprig's join makes of v.
func listLen(v any) int {
	switch l := v.(type) {
	case []string:
		return len(l)
	case []any:
		return len(l)
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array {
		return rv.Len()
	}
	return 1
}

// regexReplace is sprig's regexReplaceAll (expand: $1 and ${name} in repl
// are expanded) or regexReplaceAllLiteral, refusing — after counting the
// matches, before building the result — a result that could be larger than
// MaxValueSize: len(s) plus, per match, repl and each $ reference expanded
// to at most the match (submatches lie within it, and matches do not
// overlap, so the references add at most len(s) each). An invalid regex is
// an error, not a panic.
func regexReplace(re, s, repl string, expand bool) (string, error) {
	r, err := regexp.Compile(re)
	if err != nil {
		return "", err
	}
	matches := 0
	r.ReplaceAllStringFunc(s, func(string) string { matches++; return "" })
	refs := 0
	if expand {
		refs = strings.Count(repl, "$")
	}
	if err := checkGrowth(len(s), matches, len(repl)); err != nil {
		return "", err
	}
	if err := checkGrowth(len(s)+matches*len(repl), refs, len(s)); err != nil {
		return "", err
	}
	if expand {
		return r.ReplaceAllString(s, repl), nil
	}
	return r.ReplaceAllLiteralString(s, repl), nil
}

// printf is fmt.Sprintf refusing, before formatting, a format whose widths
// and precisions could pad the result past MaxValueSize (fmt pads each verb
// up to 10⁶ bytes: "%999999d" fifty times would allocate 50 MB).
func printf(format string, args ...any) (string, error) {
	if err := checkGrowth(len(format), formatPadding(format), 1); err != nil {
		return "", err
	}
	return fmt.Sprintf(format, args...), nil
}

// formatPadding is an upper bound of the padding the widths and precisions
// of a fmt format add: every number between a % and its verb counts (arg
// indexes too: a few bytes), each capped at fmt's 10⁶, and each * (a width
// from an argument) counts as 10⁶.
func formatPadding(format string) int {
	const fmtMax = 1_000_000
	total := 0
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		for i++; i < len(format); i++ {
			c := format[i]
			if c == '*' {
				total += fmtMax
				continue
			}
			if c >= '0' && c <= '9' {
				n := 0
				for ; i < len(format) && format[i] >= '0' && format[i] <= '9'; i++ {
					n = min(n*10+int(format[i]-'0'), fmtMax)
				}
				total += n
				i--
				continue
			}
			if strings.IndexByte("+-# .[]", c) < 0 {
				break // the verb (or %%)
			}
		}
		if total > MaxValueSize {
			return total
		}
	}
	return total
}

var errorType = reflect.TypeFor[error]()

// boundResult wraps f, a template function, so that a result larger than
// MaxValueSize (valueSize) is an error — and, when measureArgs, so are
// arguments that add up to more, before f runs. Functions that cannot
// return a string, list or dict are returned as they are. A wrapped
// function without an error result gains one.
func boundResult(f any, measureArgs bool) any {
	fv := reflect.ValueOf(f)
	ft := fv.Type()
	if !mayBeLarge(ft.Out(0)) {
		return f
	}
	hasErr := ft.NumOut() == 2
	wt := ft
	if !hasErr {
		in := make([]reflect.Type, ft.NumIn())
		for i := range in {
			in[i] = ft.In(i)
		}
		wt = reflect.FuncOf(in, []reflect.Type{ft.Out(0), errorType}, ft.IsVariadic())
	}
	failed := func(err error) []reflect.Value {
		return []reflect.Value{reflect.Zero(ft.Out(0)), reflect.ValueOf(&err).Elem()}
	}
	return reflect.MakeFunc(wt, func(args []reflect.Value) []reflect.Value {
		if measureArgs {
			size := 0
			for _, a := range args {
				if size += valueSize(a, MaxValueSize-size); size > MaxValueSize {
					return failed(fmt.Errorf("the arguments add up to more than a template value may be (%d bytes)", MaxValueSize))
				}
			}
		}
		var out []reflect.Value
		if ft.IsVariadic() {
			out = fv.CallSlice(args)
		} else {
			out = fv.Call(args)
		}
		if hasErr && !out[1].IsNil() {
			return out
		}
		if valueSize(out[0], MaxValueSize) > MaxValueSize {
			return failed(fmt.Errorf("the result is larger than a template value may be (%d bytes)", MaxValueSize))
		}
		if !hasErr {
			out = append(out, reflect.Zero(errorType))
		}
		return out
	}).Interface()
}

// mayBeLarge reports whether a value of type t can hold a string, list or
// dict.
func mayBeLarge(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String, reflect.Slice, reflect.Array, reflect.Map, reflect.Interface, reflect.Pointer:
		return true
	}
	return false
}

// valueSize measures v about as it would print as indented JSON: the bytes
// of its strings (keys included), plus, for every element, entry and
// scalar, one more than its depth. Shared lists and dicts count each time
// they occur, as they would print. It stops as soon as the size passes
// limit, so measuring costs at most limit steps, even for a value built to
// be huge or one that contains itself.
func valueSize(v reflect.Value, limit int) int {
	if !v.IsValid() || !v.CanInterface() {
		return 1
	}
	return sizeOf(v.Interface(), 0, limit)
}

// sizeOf is valueSize of x at depth; the types templates mostly hold are
// measured without reflection.
func sizeOf(x any, depth, limit int) int {
	n := depth + 1
	switch t := x.(type) {
	case nil, bool, int, int64, float64:
	case string:
		n += len(t)
	case []any:
		for i := 0; i < len(t) && n <= limit; i++ {
			n += sizeOf(t[i], depth+1, limit-n)
		}
	case map[string]any:
		for k, e := range t {
			if n > limit {
				break
			}
			n += depth + 2 + len(k) + sizeOf(e, depth+1, limit-n)
		}
	case []string:
		for i := 0; i < len(t) && n <= limit; i++ {
			n += depth + 2 + len(t[i])
		}
	case []int:
		n += len(t) * (depth + 2)
	case map[string]string:
		for k, e := range t {
			if n > limit {
				break
			}
			n += 2*(depth+2) + len(k) + len(e)
		}
	default:
		return sizeAt(reflect.ValueOf(x), depth, limit)
	}
	return n
}

// sizeAt is sizeOf by reflection, for the other types.
func sizeAt(v reflect.Value, depth, limit int) int {
	n := depth + 1
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer:
		if !v.IsNil() {
			return sizeAt(v.Elem(), depth, limit)
		}
	case reflect.String:
		n += v.Len()
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return n + v.Len()
		}
		for i := 0; i < v.Len() && n <= limit; i++ {
			n += sizeAt(v.Index(i), depth+1, limit-n)
		}
	case reflect.Map:
		for it := v.MapRange(); n <= limit && it.Next(); {
			n += sizeAt(it.Key(), depth+1, limit-n)
			n += sizeAt(it.Value(), depth+1, limit-n)
		}
	}
	return n
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
	for _, k := range slices.Sorted(maps.Keys(dict)) {
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
