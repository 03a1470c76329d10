// LAST_DAY, WEEK(<weekday>) date parts, and the TIME functions (TIME,
// TIME_ADD/SUB/DIFF/TRUNC).

package filter

import (
	"fmt"
	"math"
	"strings"
)

var weekdayIndex = map[string]int64{"SUNDAY": 0, "MONDAY": 1, "TUESDAY": 2, "WEDNESDAY": 3, "THURSDAY": 4, "FRIDAY": 5, "SATURDAY": 6}

// datePartArg reads a date-part argument: an identifier (DAY, MONTH, ...)
// or WEEK(<weekday>), returned as "WEEK(MONDAY)".
func datePartArg(x Expr) (string, bool) {
	switch a := x.(type) {
	case *Ident:
		if len(a.Parts) == 1 {
			return strings.ToUpper(a.Parts[0]), true
		}
	case *Call:
		if a.Name == "WEEK" && !a.Safe && len(a.Args) == 1 {
			if id, ok := a.Args[0].(*Ident); ok && len(id.Parts) == 1 {
				day := strings.ToUpper(id.Parts[0])
				if _, ok := weekdayIndex[day]; ok {
					return "WEEK(" + day + ")", true
				}
			}
		}
	}
	return "", false
}

// weekStart is the first weekday (0 Sunday) of a WEEK or WEEK(<day>)
// part; false for other parts.
func weekStart(part string) (int64, bool) {
	if part == "WEEK" {
		return 0, true
	}
	if day, ok := strings.CutPrefix(part, "WEEK("); ok {
		w, ok := weekdayIndex[strings.TrimSuffix(day, ")")]
		return w, ok
	}
	return 0, false
}

// truncWeek truncates days to the start of its week beginning on weekday w.
func truncWeek(days, w int64) int64 { return days - floorMod(days+4-w, 7) }

// lastDay is LAST_DAY: the last date of the part (YEAR, QUARTER, MONTH,
// WEEK, WEEK(<day>), ISOWEEK, ISOYEAR) that holds days.
func lastDay(days int64, part string) (int64, bool) {
	if w, ok := weekStart(part); ok {
		return truncWeek(days, w) + 6, true
	}
	switch part {
	case "ISOWEEK":
		return truncDays(days, "ISOWEEK") + 6, true
	case "MONTH", "QUARTER", "YEAR":
		n := map[string]int64{"MONTH": 1, "QUARTER": 3, "YEAR": 12}[part]
		next, ok := addMonths(truncDays(days, part), n)
		return next - 1, ok
	case "ISOYEAR":
		start := truncDays(days, "ISOYEAR")
		return truncDays(start+371, "ISOYEAR") - 1, true
	}
	return 0, false
}

var timeParts = map[string]bool{"MICROSECOND": true, "MILLISECOND": true, "SECOND": true, "MINUTE": true, "HOUR": true}

func registerWeeks() {
	registerBuckets()
	builtins["LAST_DAY"] = func(c *checker, e *Call, args []node) (node, error) {
		if len(e.Args) < 1 || len(e.Args) > 2 {
			return nil, c.errf(e.P, "Number of arguments does not match for function LAST_DAY. Expected 1 to 2 arguments but got %d", len(e.Args))
		}
		part := "MONTH"
		if len(e.Args) == 2 {
			var ok bool
			if part, ok = datePartArg(e.Args[1]); !ok {
				return nil, c.errf(e.Args[1].Pos(), "LAST_DAY expects a date part as its second argument")
			}
			if _, ok := lastDay(0, part); !ok {
				return nil, c.errf(e.Args[1].Pos(), "Unsupported date part %s in function LAST_DAY", part)
			}
		}
		t := tDate
		if args[0] != nil && args[0].typ() == tDatetime {
			t = tDatetime
		}
		return c.sig(e, args[:1], []typ{t}, tDate, func(a []value) (value, error) {
			d := a[0].i
			if t == tDatetime {
				d = floorDiv(d, microsPerDay)
			}
			r, ok := lastDay(d, part)
			if !ok || r > maxDate {
				return value{}, fmt.Errorf("DATE value is out of allowed range")
			}
			return value{i: r}, nil
		})
	}
	builtins["TIME"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 1, 3); err != nil {
			return nil, err
		}
		switch {
		case len(args) == 3:
			return c.sig(e, args, []typ{tInt, tInt, tInt}, tTime, func(a []value) (value, error) {
				h, m, s := a[0].i, a[1].i, a[2].i
				if h < 0 || h > 23 || m < 0 || m > 59 || s < 0 || s > 59 {
					return value{}, fmt.Errorf("Input calculates to invalid time value: %02d:%02d:%02d", h, m, s)
				}
				return value{i: ((h*60+m)*60 + s) * microsPerSecond}, nil
			})
		case args[0].typ() == tDatetime && len(args) == 1:
			return c.sig(e, args, []typ{tDatetime}, tTime, func(a []value) (value, error) {
				return value{i: floorMod(a[0].i, microsPerDay)}, nil
			})
		case args[0].typ() == tTime && len(args) == 1:
			return args[0], nil
		case args[0].typ() == tTimestamp || args[0].typ() == tNull:
			return c.sig(e, args, append([]typ{tTimestamp}, repeatT(tString, len(args)-1)...), tTime, func(a []value) (value, error) {
				loc, err := zoneArg(a, 1)
				if err != nil {
					return value{}, err
				}
				return value{i: floorMod(utcToLocal(a[0].i, loc), microsPerDay)}, nil
			})
		}
		return nil, c.noSig(e, args)
	}
}

// registerBuckets adds DATE_BUCKET, DATETIME_BUCKET and TIMESTAMP_BUCKET:
// the start of the bucket of width INTERVAL n part (counted from origin,
// 1950-01-01 00:00:00 by default) that holds the value.
func registerBuckets() {
	bucket := func(t typ) builtin {
		return func(c *checker, e *Call, args []node) (node, error) {
			if len(e.Args) < 2 || len(e.Args) > 3 {
				return nil, c.errf(e.P, "Number of arguments does not match for function %s. Expected 2 to 3 arguments but got %d", e.Name, len(e.Args))
			}
			iv, ok := e.Args[1].(*Interval)
			if !ok {
				return nil, c.errf(e.Args[1].Pos(), "%s expects an INTERVAL as its second argument", e.Name)
			}
			months := map[string]int64{"MONTH": 1, "QUARTER": 3, "YEAR": 12}[iv.Part]
			unit, byMicros := partMicros[iv.Part]
			if iv.Part == "WEEK" {
				unit, byMicros = 7*microsPerDay, true
			}
			if !byMicros && (months == 0 || t == tTimestamp) || t == tDate && byMicros && unit < microsPerDay {
				return nil, c.errf(iv.P, "Unsupported date part %s in function %s", iv.Part, e.Name)
			}
			if args[0] == nil || len(args) == 3 && args[2] == nil {
				return nil, c.noSig(e, args)
			}
			k, err := c.check(iv.X)
			if err != nil {
				return nil, err
			}
			rest := []node{args[0], k}
			want := []typ{t, tInt}
			if len(args) == 3 {
				rest, want = append(rest, args[2]), append(want, t)
			}
			origin := daysFromCivil(1950, 1, 1)
			if t != tDate {
				origin *= microsPerDay
			}
			return c.sig(e, rest, want, t, func(a []value) (value, error) {
				n := a[1].i
				if n <= 0 {
					return value{}, fmt.Errorf("%s requires a positive bucket width", e.Name)
				}
				o := origin
				if len(a) == 3 {
					o = a[2].i
				}
				v := a[0].i
				if months > 0 {
					// Whole months from the origin's day of month and time.
					od, ot := o, int64(0)
					vd, vt := v, int64(0)
					if t != tDate {
						od, ot = floorDiv(o, microsPerDay), floorMod(o, microsPerDay)
						vd, vt = floorDiv(v, microsPerDay), floorMod(v, microsPerDay)
					}
					oy, om, odd := civilFromDays(od)
					vy, vm, vdd := civilFromDays(vd)
					diff := (vy*12 + vm) - (oy*12 + om)
					if vdd < odd || vdd == odd && vt < ot {
						diff--
					}
					step := n * months
					b, ok := addMonths(od, floorDiv(diff, step)*step)
					if !ok {
						return value{}, fmt.Errorf("%s result is out of range", e.Name)
					}
					if t == tDate {
						return value{i: b}, nil
					}
					return value{i: b*microsPerDay + ot}, nil
				}
				w := unit
				if t == tDate {
					w /= microsPerDay
				}
				if n > math.MaxInt64/w {
					return value{}, fmt.Errorf("%s bucket width overflows", e.Name)
				}
				w *= n
				return value{i: o + floorDiv(v-o, w)*w}, nil
			})
		}
	}
	builtins["DATE_BUCKET"] = bucket(tDate)
	builtins["DATETIME_BUCKET"] = bucket(tDatetime)
	builtins["TIMESTAMP_BUCKET"] = bucket(tTimestamp)
}
