package e2e

import (
	"fmt"
	"math/big"
	"slices"
	"testing"
	"time"

	"cloud.google.com/go/civil"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// marshalRow encodes one row for managedwriter from a map of column name
// to value: int64, int32, float64, bool, string, []byte, a nested
// map[string]any for a RECORD or RANGE message, and []any for a REPEATED
// field. Missing columns are left unset (NULL).
func marshalRow(t testing.TB, md protoreflect.MessageDescriptor, v map[string]any) []byte {
	t.Helper()
	m, err := buildMessage(md, v)
	if err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func buildMessage(md protoreflect.MessageDescriptor, v map[string]any) (*dynamicpb.Message, error) {
	m := dynamicpb.NewMessage(md)
	for name, val := range v {
		fd := md.Fields().ByName(protoreflect.Name(name))
		if fd == nil {
			return nil, fmt.Errorf("no field %q in %s", name, md.FullName())
		}
		if fd.IsList() {
			list := m.Mutable(fd).List()
			for _, el := range val.([]any) {
				pv, err := protoValue(fd, el, list.NewElement)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", name, err)
				}
				list.Append(pv)
			}
			continue
		}
		pv, err := protoValue(fd, val, func() protoreflect.Value { return m.NewField(fd) })
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		m.Set(fd, pv)
	}
	return m, nil
}

func protoValue(fd protoreflect.FieldDescriptor, v any, _ func() protoreflect.Value) (protoreflect.Value, error) {
	switch x := v.(type) {
	case map[string]any:
		sub, err := buildMessage(fd.Message(), x)
		if err != nil {
			return protoreflect.Value{}, err
		}
		return protoreflect.ValueOfMessage(sub), nil
	case int64:
		return protoreflect.ValueOfInt64(x), nil
	case int32:
		return protoreflect.ValueOfInt32(x), nil
	case float64:
		return protoreflect.ValueOfFloat64(x), nil
	case bool:
		return protoreflect.ValueOfBool(x), nil
	case string:
		return protoreflect.ValueOfString(x), nil
	case []byte:
		return protoreflect.ValueOfBytes(x), nil
	case time.Time:
		return protoreflect.ValueOfInt64(x.UnixMicro()), nil
	case civil.Date:
		return protoreflect.ValueOfInt32(int32(x.DaysSince(unixEpochDate))), nil
	case civil.Time:
		return protoreflect.ValueOfInt64(packedTime(x)), nil
	case civil.DateTime:
		return protoreflect.ValueOfInt64(packedDatetime(x)), nil
	case numeric:
		b, err := decimalBytes(x.r, 9)
		return protoreflect.ValueOfBytes(b), err
	case bignumeric:
		b, err := decimalBytes(x.r, 38)
		return protoreflect.ValueOfBytes(b), err
	}
	return protoreflect.Value{}, fmt.Errorf("unsupported value %T", v)
}

// Logical input values that marshalRow encodes as managedwriter users do.
type (
	// numeric is a NUMERIC value: bytes, two's complement little-endian
	// of value×10^9 (BigDecimalByteStringEncoder).
	numeric struct{ r *big.Rat }
	// bignumeric is a BIGNUMERIC value: value×10^38, as numeric.
	bignumeric struct{ r *big.Rat }
)

func rat(s string) *big.Rat {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		panic("bad rational " + s)
	}
	return r
}

// decimalBytes is r×10^scale as two's-complement little-endian bytes.
func decimalBytes(r *big.Rat, scale int) ([]byte, error) {
	v := new(big.Rat).Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
	if !v.IsInt() {
		return nil, fmt.Errorf("%s has more than %d fractional digits", r.FloatString(scale+2), scale)
	}
	n := v.Num()
	// Two's complement big-endian in the fewest bytes, then reversed.
	size := n.BitLen()/8 + 1
	var be []byte
	if n.Sign() >= 0 {
		be = n.FillBytes(make([]byte, size))
	} else {
		m := new(big.Int).Add(new(big.Int).Lsh(big.NewInt(1), uint(size*8)), n)
		be = m.FillBytes(make([]byte, size))
	}
	slices.Reverse(be)
	return be, nil
}

// packedTime is CivilTimeEncoder's 64-bit TIME.
func packedTime(t civil.Time) int64 {
	return int64(t.Hour)<<32 | int64(t.Minute)<<26 | int64(t.Second)<<20 | int64(t.Nanosecond/1000)
}

// packedDatetime is CivilTimeEncoder's 64-bit DATETIME.
func packedDatetime(dt civil.DateTime) int64 {
	return int64(dt.Date.Year)<<46 | int64(dt.Date.Month)<<42 | int64(dt.Date.Day)<<37 | packedTime(dt.Time)
}

var unixEpochDate = civil.Date{Year: 1970, Month: 1, Day: 1}
