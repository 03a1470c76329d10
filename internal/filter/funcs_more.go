package filter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// truncDays truncates a date (days since the epoch) to the start of part.
func truncDays(days int64, part string) int64 {
	if w, ok := weekStart(part); ok {
		return truncWeek(days, w)
	}
	switch part {
	case "ISOWEEK":
		return days - floorMod(days+3, 7) // ISO weeks start on Monday
	case "MONTH", "QUARTER", "YEAR":
		y, m, _ := civilFromDays(days)
		switch part {
		case "QUARTER":
			m = (m-1)/3*3 + 1
		case "YEAR":
			m = 1
		}
		return daysFromCivil(y, m, 1)
	case "ISOYEAR":
		iy, _ := extractDatePart(days, "ISOYEAR")
		jan4 := daysFromCivil(iy, 1, 4)
		return jan4 - floorMod(jan4+3, 7)
	}
	return days
}

// truncMicros truncates wall-clock microseconds to the start of part.
func truncMicros(us int64, part string) int64 {
	if unit, ok := partMicros[part]; ok {
		return floorDiv(us, unit) * unit
	}
	return truncDays(floorDiv(us, microsPerDay), part) * microsPerDay
}

var truncParts = map[typ]map[string]bool{
	tDate:      {"DAY": true, "WEEK": true, "ISOWEEK": true, "MONTH": true, "QUARTER": true, "YEAR": true, "ISOYEAR": true},
	tDatetime:  {"MICROSECOND": true, "MILLISECOND": true, "SECOND": true, "MINUTE": true, "HOUR": true, "DAY": true, "WEEK": true, "ISOWEEK": true, "MONTH": true, "QUARTER": true, "YEAR": true, "ISOYEAR": true},
	tTimestamp: {"MICROSECOND": true, "MILLISECOND": true, "SECOND": true, "MINUTE": true, "HOUR": true, "DAY": true, "WEEK": true, "ISOWEEK": true, "MONTH": true, "QUARTER": true, "YEAR": true, "ISOYEAR": true},
	tTime:      {"MICROSECOND": true, "MILLISECOND": true, "SECOND": true, "MINUTE": true, "HOUR": true},
}

func truncFn(t typ) builtin {
	return func(c *checker, e *Call, args []node) (node, error) {
		max := 2
		if t == tTimestamp {
			max = 3
		}
		if len(e.Args) < 2 || len(e.Args) > max {
			return nil, c.errf(e.P, "Number of arguments does not match for function %s. Expected 2 to %d arguments but got %d", e.Name, max, len(e.Args))
		}
		part, ok := datePartArg(e.Args[1])
		if !ok {
			return nil, c.errf(e.Args[1].Pos(), "%s expects a date part as its second argument", e.Name)
		}
		if _, week := weekStart(part); !truncParts[t][part] && !(week && t != tTime) {
			return nil, c.errf(e.Args[1].Pos(), "Unsupported date part %s in function %s", part, e.Name)
		}
		rest := append([]node{args[0]}, args[2:]...)
		want := append([]typ{t}, repeatT(tString, len(rest)-1)...)
		return c.sig(e, rest, want, t, func(a []value) (value, error) {
			switch t {
			case tDate:
				return value{i: truncDays(a[0].i, part)}, nil
			case tDatetime, tTime:
				return value{i: truncMicros(a[0].i, part)}, nil
			}
			loc, err := zoneArg(a, 1)
			if err != nil {
				return value{}, err
			}
			if loc == time.UTC {
				return value{i: truncMicros(a[0].i, part)}, nil
			}
			local := utcToLocal(a[0].i, loc)
			if unit, ok := partMicros[part]; ok && unit < microsPerDay {
				// HOUR and finer keep the input's own UTC offset: the
				// part of the local time below unit is subtracted from
				// the instant (ZetaSQL's TimestampTruncAtLeastMinute),
				// so in a repeated hour after a DST fall-back 01:30 EST
				// truncates to 01:00 EST, not to the earlier 01:00 EDT
				// that converting the local 01:00 back would pick.
				return value{i: a[0].i - (local - truncMicros(local, part))}, nil
			}
			v, err := localToUTC(truncMicros(local, part), loc)
			return value{i: v}, err
		})
	}
}

// jsonPath evaluates a JSONPath of the form GoogleSQL's JSON functions
// take: $, then .name, ."quoted name", ['name'] or [index] steps.
func jsonPath(doc, path string) (any, bool, error) { return jsonPathMode(doc, path, false) }

// jsonPathMode is jsonPath; legacy is the JSON_EXTRACT family's JSONPath,
// where a bracketed step may be an unquoted name ($[a]) and a number
// names an object's member as well as an array's element (zetasql
// compliance json_extract: "$[a][1]['b.c']").
func jsonPathMode(doc, path string, legacy bool) (any, bool, error) {
	d := json.NewDecoder(strings.NewReader(doc))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, false, fmt.Errorf("Invalid JSON: %v", err)
	}
	p := strings.TrimSpace(path)
	if !strings.HasPrefix(p, "$") {
		return nil, false, fmt.Errorf("Invalid JSONPath: %s", path)
	}
	p = p[1:]
	for p != "" {
		var key string
		idx := -1
		switch {
		case strings.HasPrefix(p, ".\""):
			end := strings.Index(p[2:], "\"")
			if end < 0 {
				return nil, false, fmt.Errorf("Invalid JSONPath: %s", path)
			}
			key, p = p[2:2+end], p[3+end:]
		case p[0] == '.':
			end := strings.IndexAny(p[1:], ".[")
			if end < 0 {
				end = len(p) - 1
			}
			key, p = p[1:1+end], p[1+end:]
			if key == "" {
				return nil, false, fmt.Errorf("Invalid JSONPath: %s", path)
			}
		case p[0] == '[':
			end := strings.Index(p, "]")
			if end < 0 {
				return nil, false, fmt.Errorf("Invalid JSONPath: %s", path)
			}
			in := strings.TrimSpace(p[1:end])
			p = p[end+1:]
			if len(in) >= 2 && (in[0] == '\'' || in[0] == '"') && in[len(in)-1] == in[0] {
				key = in[1 : len(in)-1]
			} else {
				n, err := strconv.Atoi(in)
				switch {
				case legacy && (err != nil || n < 0) && in != "":
					key = in
				case err != nil || n < 0:
					return nil, false, fmt.Errorf("Invalid JSONPath: %s", path)
				case legacy:
					if _, isObj := v.(map[string]any); isObj {
						key = in
						break
					}
					idx = n
				default:
					idx = n
				}
			}
		default:
			return nil, false, fmt.Errorf("Invalid JSONPath: %s", path)
		}
		if idx >= 0 {
			arr, ok := v.([]any)
			if !ok || idx >= len(arr) {
				return nil, false, nil
			}
			v = arr[idx]
			continue
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, false, nil
		}
		if v, ok = obj[key]; !ok {
			return nil, false, nil
		}
	}
	return v, true, nil
}

func registerMore() {
	builtins["DATE_TRUNC"] = truncFn(tDate)
	builtins["DATETIME_TRUNC"] = truncFn(tDatetime)
	builtins["TIMESTAMP_TRUNC"] = truncFn(tTimestamp)
	builtins["TIME_TRUNC"] = truncFn(tTime)
	jsonFn := func(scalar bool) builtin {
		return func(c *checker, e *Call, args []node) (node, error) {
			if err := c.arity(e, args, 1, 2); err != nil {
				return nil, err
			}
			ret := tJSON
			if scalar {
				ret = tString
			}
			legacy := strings.HasPrefix(e.Name, "JSON_EXTRACT")
			want := []typ{tJSON, tString}[:len(args)]
			if args[0].typ() == tString {
				want[0] = tString // the JSON-formatted STRING signature
				if !scalar {
					ret = tString
				}
			}
			return c.sig(e, args, want, ret, func(a []value) (value, error) {
				path := "$"
				if len(a) == 2 {
					path = a[1].s
				}
				v, ok, err := jsonPathMode(a[0].s, path, legacy)
				if err != nil || !ok || v == nil {
					return nullValue, err
				}
				if scalar {
					switch v := v.(type) {
					case string:
						return value{s: v}, nil
					case json.Number:
						return value{s: v.String()}, nil
					case bool:
						return value{s: strconv.FormatBool(v)}, nil
					}
					return nullValue, nil
				}
				var b bytes.Buffer
				enc := json.NewEncoder(&b)
				enc.SetEscapeHTML(false)
				if err := enc.Encode(v); err != nil {
					return value{}, err
				}
				return value{s: strings.TrimSuffix(b.String(), "\n")}, nil
			})
		}
	}
	builtins["JSON_VALUE"] = jsonFn(true)
	builtins["JSON_EXTRACT_SCALAR"] = jsonFn(true)
	builtins["JSON_QUERY"] = jsonFn(false)
	builtins["JSON_EXTRACT"] = jsonFn(false)
	leftRight := func(left bool) builtin {
		return func(c *checker, e *Call, args []node) (node, error) {
			if err := c.arity(e, args, 2, 2); err != nil {
				return nil, err
			}
			t, ok := stringOrBytes(args[:1])
			if !ok {
				return nil, c.noSig(e, args)
			}
			return c.sig(e, args, []typ{t, tInt}, t, func(a []value) (value, error) {
				s, n := a[0].s, a[1].i
				if n < 0 {
					return value{}, fmt.Errorf("Second argument in %s() cannot be negative: %d", e.Name, n)
				}
				if t == tBytes {
					n = min(n, int64(len(s)))
					if left {
						return value{s: s[:n]}, nil
					}
					return value{s: s[int64(len(s))-n:]}, nil
				}
				chars := int64(utf8.RuneCountInString(s))
				n = min(n, chars)
				k := n
				if !left {
					k = chars - n
				}
				off := 0
				for i := int64(0); i < k; i++ {
					_, w := utf8.DecodeRuneInString(s[off:])
					off += w
				}
				if left {
					return value{s: s[:off]}, nil
				}
				return value{s: s[off:]}, nil
			})
		}
	}
	builtins["LEFT"] = leftRight(true)
	builtins["RIGHT"] = leftRight(false)
}
