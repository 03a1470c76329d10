// Date and time functions (EXTRACT, DATE_ADD, DATE_DIFF, ..._TRUNC, ...)
// of the expression language.

package filter

import (
	"fmt"
	"math"
	"strings"
	"time"
)

type extractNode struct {
	x    node
	part string
	t    typ
	p    int
}

func (n *extractNode) typ() typ { return n.t }
func (n *extractNode) pos() int { return n.p }

func (n *extractNode) eval(ctx *evalCtx) (*vec, error) {
	x, err := n.x.eval(ctx)
	if err != nil {
		return nil, err
	}
	out := newVec(n.t, x.n)
	out.konst = x.konst
	if x.nulls != nil {
		out.nulls = append([]bool(nil), x.nulls...)
	}
	for i := 0; i < x.n; i++ {
		if x.isNull(i) {
			continue
		}
		out.i[i] = extractValue(x.t, x.i[i], n.part)
	}
	return out, nil
}

func extractValue(t typ, v int64, part string) int64 {
	var days, tod int64
	switch t {
	case tDate:
		days = v
	case tTime:
		tod = v
	default:
		days, tod = floorDiv(v, microsPerDay), floorMod(v, microsPerDay)
	}
	switch part {
	case "DATE":
		return days
	case "TIME":
		return tod
	case "HOUR":
		return tod / (3600 * microsPerSecond)
	case "MINUTE":
		return tod / (60 * microsPerSecond) % 60
	case "SECOND":
		return tod / microsPerSecond % 60
	case "MILLISECOND":
		return tod / 1000 % 1000
	case "MICROSECOND":
		return tod % microsPerSecond
	}
	r, _ := extractDatePart(days, part)
	return r
}

// dateAddNode is DATE_ADD / DATETIME_ADD / TIMESTAMP_ADD (sign -1: _SUB)
// and DATE +/- INT64.
type dateAddNode struct {
	x, n node
	sign int64
	part string
	safe bool // SAFE.DATE_ADD: overflow gives NULL
	p    int
}

func (n *dateAddNode) typ() typ { return n.x.typ() }
func (n *dateAddNode) pos() int { return n.p }

func (n *dateAddNode) eval(ctx *evalCtx) (*vec, error) {
	x, err := n.x.eval(ctx)
	if err != nil {
		return nil, err
	}
	k, err := n.n.eval(ctx)
	if err != nil {
		return nil, err
	}
	out := newVec(x.t, ctx.n)
	out.nulls = orNulls(ctx.n, x, k)
	for i := 0; i < ctx.n; i++ {
		if out.nulls != nil && out.nulls[i] {
			continue
		}
		v, ok := addPart(x.t, x.i[x.idx(i)], n.sign*k.i[k.idx(i)], n.part)
		if !ok && n.safe {
			out.set(i, nullValue)
			continue
		}
		if !ok {
			return nil, ctx.errf(n.p, "%s overflow: %s + INTERVAL %d %s", x.t, formatValue(x.t, x.get(i)), n.sign*k.i[k.idx(i)], n.part)
		}
		out.i[i] = v
	}
	return out, nil
}

func addPart(t typ, v, k int64, part string) (int64, bool) {
	if k == math.MinInt64 {
		return 0, false
	}
	if t == tDate {
		if abs64(k) > 4*(maxDate-minDate) {
			return 0, false // beyond the DATE range whatever the part
		}
		var d int64
		switch part {
		case "DAY":
			d = v + k
		case "WEEK":
			d = v + 7*k
		case "MONTH", "QUARTER", "YEAR":
			m := map[string]int64{"MONTH": 1, "QUARTER": 3, "YEAR": 12}[part]
			if abs64(k) > 120000 {
				return 0, false
			}
			var ok bool
			if d, ok = addMonths(v, k*m); !ok {
				return 0, false
			}
		}
		return d, d >= minDate && d <= maxDate
	}
	if t == tTime {
		// TIME wraps around midnight.
		unit := partMicros[part]
		return floorMod(v+floorMod(k, microsPerDay/unit)*unit, microsPerDay), true
	}
	var r int64
	if unit, ok := partMicros[part]; ok {
		if abs64(k) > (maxMicros-minMicros)/unit {
			return 0, false
		}
		r = v + k*unit
	} else {
		days, tod := floorDiv(v, microsPerDay), floorMod(v, microsPerDay)
		d, ok := addPart(tDate, days, k, part)
		if !ok {
			return 0, false
		}
		r = d*microsPerDay + tod
	}
	return r, r >= minMicros && r <= maxMicros
}

var dateAddParts = map[string]map[string]bool{
	"DATE":      {"DAY": true, "WEEK": true, "MONTH": true, "QUARTER": true, "YEAR": true},
	"DATETIME":  {"MICROSECOND": true, "MILLISECOND": true, "SECOND": true, "MINUTE": true, "HOUR": true, "DAY": true, "WEEK": true, "MONTH": true, "QUARTER": true, "YEAR": true},
	"TIMESTAMP": {"MICROSECOND": true, "MILLISECOND": true, "SECOND": true, "MINUTE": true, "HOUR": true, "DAY": true},
	"TIME":      {"MICROSECOND": true, "MILLISECOND": true, "SECOND": true, "MINUTE": true, "HOUR": true},
}

func registerTime() {
	addFn := func(kind string, t typ, sign int64) builtin {
		return func(c *checker, e *Call, args []node) (node, error) {
			if len(e.Args) != 2 {
				return nil, c.errf(e.P, "Number of arguments does not match for function %s. Expected 2 arguments but got %d", e.Name, len(e.Args))
			}
			iv, ok := e.Args[1].(*Interval)
			if !ok {
				return nil, c.errf(e.Args[1].Pos(), "%s expects an INTERVAL as its second argument", e.Name)
			}
			if !dateAddParts[kind][iv.Part] {
				return nil, c.errf(iv.P, "Unsupported date part %s in function %s", iv.Part, e.Name)
			}
			if args[0] == nil {
				return nil, c.noSig(e, args)
			}
			x, err := c.coerce(args[0], t, "function "+e.Name)
			if err != nil {
				return nil, c.noSig(e, args)
			}
			k, err := c.check(iv.X)
			if err != nil {
				return nil, err
			}
			if k, err = c.coerce(k, tInt, "INTERVAL"); err != nil {
				return nil, err
			}
			return c.fold(&dateAddNode{x: x, n: k, sign: sign, part: iv.Part, safe: c.safeCall, p: e.P}, x, k)
		}
	}
	builtins["DATE_ADD"] = addFn("DATE", tDate, 1)
	builtins["DATE_SUB"] = addFn("DATE", tDate, -1)
	builtins["DATETIME_ADD"] = addFn("DATETIME", tDatetime, 1)
	builtins["DATETIME_SUB"] = addFn("DATETIME", tDatetime, -1)
	builtins["TIMESTAMP_ADD"] = addFn("TIMESTAMP", tTimestamp, 1)
	builtins["TIMESTAMP_SUB"] = addFn("TIMESTAMP", tTimestamp, -1)
	builtins["TIME_ADD"] = addFn("TIME", tTime, 1)
	builtins["TIME_SUB"] = addFn("TIME", tTime, -1)
	diffFn := func(t typ) builtin {
		return func(c *checker, e *Call, args []node) (node, error) {
			if len(e.Args) != 3 {
				return nil, c.errf(e.P, "Number of arguments does not match for function %s. Expected 3 arguments but got %d", e.Name, len(e.Args))
			}
			part, ok := datePartArg(e.Args[2])
			if !ok {
				return nil, c.errf(e.Args[2].Pos(), "%s expects a date part as its third argument", e.Name)
			}
			valid := dateAddParts[t.String()][part]
			if _, week := weekStart(part); week || part == "ISOWEEK" || part == "ISOYEAR" {
				valid = t == tDate || t == tDatetime
			}
			if !valid {
				return nil, c.errf(e.Args[2].Pos(), "Unsupported date part %s in function %s", part, e.Name)
			}
			return c.sig(e, args[:2], []typ{t, t}, tInt, func(a []value) (value, error) {
				return value{i: diffValue(t, a[0].i, a[1].i, part)}, nil
			})
		}
	}
	builtins["DATE_DIFF"] = diffFn(tDate)
	builtins["DATETIME_DIFF"] = diffFn(tDatetime)
	builtins["TIMESTAMP_DIFF"] = diffFn(tTimestamp)
	builtins["TIME_DIFF"] = diffFn(tTime)

	builtins["DATE"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 1, 3); err != nil {
			return nil, err
		}
		switch {
		case len(args) == 3:
			return c.sig(e, args, []typ{tInt, tInt, tInt}, tDate, func(a []value) (value, error) {
				y, m, d := a[0].i, a[1].i, a[2].i
				if y < 1 || y > 9999 || m < 1 || m > 12 || d < 1 || d > daysIn(y, m) {
					return value{}, fmt.Errorf("Input calculates to invalid date: %04d-%02d-%02d", y, m, d)
				}
				return value{i: daysFromCivil(y, m, d)}, nil
			})
		case args[0].typ() == tDatetime && len(args) == 1:
			return c.sig(e, args, []typ{tDatetime}, tDate, func(a []value) (value, error) {
				return value{i: floorDiv(a[0].i, microsPerDay)}, nil
			})
		case args[0].typ() == tDate && len(args) == 1:
			return args[0], nil
		case args[0].typ() == tString && len(args) == 1:
			return c.sig(e, args, []typ{tString}, tDate, func(a []value) (value, error) {
				d, err := parseDate(a[0].s)
				return value{i: d}, err
			})
		case args[0].typ() == tString && len(args) == 2:
			// Only a string literal coerces to TIMESTAMP here.
			if k, ok := args[0].(*constNode); !ok || !k.lit {
				return nil, c.noSig(e, args)
			}
			return c.sig(e, args, []typ{tTimestamp, tString}, tDate, func(a []value) (value, error) {
				loc, err := zoneArg(a, 1)
				if err != nil {
					return value{}, err
				}
				return value{i: floorDiv(utcToLocal(a[0].i, loc), microsPerDay)}, nil
			})
		case args[0].typ() == tTimestamp || args[0].typ() == tNull:
			return c.sig(e, args, append([]typ{tTimestamp}, repeatT(tString, len(args)-1)...), tDate, func(a []value) (value, error) {
				loc, err := zoneArg(a, 1)
				if err != nil {
					return value{}, err
				}
				return value{i: floorDiv(utcToLocal(a[0].i, loc), microsPerDay)}, nil
			})
		}
		return nil, c.noSig(e, args)
	}
	builtins["TIMESTAMP"] = func(c *checker, e *Call, args []node) (node, error) {
		if err := c.arity(e, args, 1, 2); err != nil {
			return nil, err
		}
		t := args[0].typ()
		switch t {
		case tString, tDate, tDatetime, tNull:
		case tTimestamp:
			if len(args) == 1 {
				return args[0], nil
			}
			return nil, c.noSig(e, args)
		default:
			return nil, c.noSig(e, args)
		}
		if t == tNull {
			t = tString
		}
		return c.sig(e, args, append([]typ{t}, repeatT(tString, len(args)-1)...), tTimestamp, func(a []value) (value, error) {
			loc, err := zoneArg(a, 1)
			if err != nil {
				return value{}, err
			}
			switch t {
			case tString:
				v, err := parseTimestamp(a[0].s, loc)
				return value{i: v}, err
			case tDate:
				v, err := localToUTC(a[0].i*microsPerDay, loc)
				return value{i: v}, err
			}
			v, err := localToUTC(a[0].i, loc)
			return value{i: v}, err
		})
	}
	builtins["DATETIME"] = func(c *checker, e *Call, args []node) (node, error) {
		if len(args) == 6 {
			// DATETIME(year, month, day, hour, minute, second); the error
			// text is zetasql's ConstructDatetime (hour printed %04d).
			return c.sig(e, args, repeatT(tInt, 6), tDatetime, func(a []value) (value, error) {
				y, mo, d, h, mi, s := a[0].i, a[1].i, a[2].i, a[3].i, a[4].i, a[5].i
				if y < 1 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) ||
					h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 || s > 59 {
					return value{}, fmt.Errorf("Input calculates to invalid datetime: %04d-%02d-%02d %04d:%02d:%02d", y, mo, d, h, mi, s)
				}
				return value{i: daysFromCivil(y, mo, d)*microsPerDay + ((h*60+mi)*60+s)*microsPerSecond}, nil
			})
		}
		if err := c.arity(e, args, 1, 2); err != nil {
			return nil, err
		}
		switch args[0].typ() {
		case tDate:
			if len(args) == 1 {
				return c.sig(e, args, []typ{tDate}, tDatetime, func(a []value) (value, error) { return value{i: a[0].i * microsPerDay}, nil })
			}
			return c.sig(e, args, []typ{tDate, tTime}, tDatetime, func(a []value) (value, error) {
				return value{i: a[0].i*microsPerDay + a[1].i}, nil
			})
		case tTimestamp:
			return c.sig(e, args, append([]typ{tTimestamp}, repeatT(tString, len(args)-1)...), tDatetime, func(a []value) (value, error) {
				loc, err := zoneArg(a, 1)
				if err != nil {
					return value{}, err
				}
				return value{i: utcToLocal(a[0].i, loc)}, nil
			})
		}
		return nil, c.noSig(e, args)
	}
	current := func(t typ) builtin {
		return func(c *checker, e *Call, args []node) (node, error) {
			max := 1
			if t == tTimestamp {
				max = 0
			}
			if err := c.arity(e, args, 0, max); err != nil {
				return nil, err
			}
			us := c.now.UnixMicro()
			return c.sigStrict(e, args, []typ{tString}, t, true, func(a []value) (value, error) {
				loc, err := zoneArg(a, 0)
				if err != nil {
					return value{}, err
				}
				local := utcToLocal(us, loc)
				switch t {
				case tDate:
					return value{i: floorDiv(local, microsPerDay)}, nil
				case tTime:
					return value{i: floorMod(local, microsPerDay)}, nil
				case tDatetime:
					return value{i: local}, nil
				}
				return value{i: us}, nil
			})
		}
	}
	builtins["CURRENT_DATE"] = current(tDate)
	builtins["CURRENT_DATETIME"] = current(tDatetime)
	builtins["CURRENT_TIME"] = current(tTime)
	builtins["CURRENT_TIMESTAMP"] = current(tTimestamp)
	unix := func(div int64) builtin {
		return func(c *checker, e *Call, args []node) (node, error) {
			return c.sig(e, args, []typ{tTimestamp}, tInt, func(a []value) (value, error) {
				return value{i: floorDiv(a[0].i, div)}, nil
			})
		}
	}
	builtins["UNIX_SECONDS"] = unix(microsPerSecond)
	builtins["UNIX_MILLIS"] = unix(1000)
	builtins["UNIX_MICROS"] = unix(1)
	builtins["UNIX_DATE"] = func(c *checker, e *Call, args []node) (node, error) {
		return c.sig(e, args, []typ{tDate}, tInt, func(a []value) (value, error) { return a[0], nil })
	}
	fromUnix := func(mul int64) builtin {
		return func(c *checker, e *Call, args []node) (node, error) {
			return c.sig(e, args, []typ{tInt}, tTimestamp, func(a []value) (value, error) {
				x := a[0].i
				if x > maxMicros/mul || x < minMicros/mul {
					return value{}, fmt.Errorf("Timestamp value is out of allowed range: %d", x)
				}
				return value{i: x * mul}, nil
			})
		}
	}
	builtins["TIMESTAMP_SECONDS"] = fromUnix(microsPerSecond)
	builtins["TIMESTAMP_MILLIS"] = fromUnix(1000)
	builtins["TIMESTAMP_MICROS"] = fromUnix(1)
	builtins["DATE_FROM_UNIX_DATE"] = func(c *checker, e *Call, args []node) (node, error) {
		return c.sig(e, args, []typ{tInt}, tDate, func(a []value) (value, error) {
			if a[0].i < minDate || a[0].i > maxDate {
				return value{}, fmt.Errorf("DATE value is out of allowed range: %d", a[0].i)
			}
			return a[0], nil
		})
	}
}

func zoneArg(a []value, i int) (*time.Location, error) {
	if len(a) <= i {
		return time.UTC, nil
	}
	loc, err := parseZone(strings.TrimSpace(a[i].s))
	if err != nil {
		return nil, fmt.Errorf("Invalid time zone: %s", a[i].s)
	}
	return loc, nil
}

func diffValue(t typ, a, b int64, part string) int64 {
	if t == tTimestamp || t == tTime {
		return (a - b) / partMicros[part]
	}
	if unit, ok := partMicros[part]; ok && t == tDatetime && part != "DAY" {
		return floorDiv(a, unit) - floorDiv(b, unit)
	}
	da, db := a, b
	if t == tDatetime {
		da, db = floorDiv(a, microsPerDay), floorDiv(b, microsPerDay)
	}
	if w, ok := weekStart(part); ok {
		// Count the week starts (Sunday for WEEK) crossed.
		return (truncWeek(da, w) - truncWeek(db, w)) / 7
	}
	switch part {
	case "DAY":
		return da - db
	case "ISOWEEK":
		return (da - floorMod(da+3, 7) - (db - floorMod(db+3, 7))) / 7
	case "MONTH", "QUARTER", "YEAR":
		ya, ma, _ := civilFromDays(da)
		yb, mb, _ := civilFromDays(db)
		switch part {
		case "MONTH":
			return (ya*12 + ma) - (yb*12 + mb)
		case "QUARTER":
			return (ya*4 + (ma-1)/3) - (yb*4 + (mb-1)/3)
		}
		return ya - yb
	case "ISOYEAR":
		ia, _ := extractDatePart(da, "ISOYEAR")
		ib, _ := extractDatePart(db, "ISOYEAR")
		return ia - ib
	}
	return 0
}
