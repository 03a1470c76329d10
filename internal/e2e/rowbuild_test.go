package e2e

import (
	"fmt"
	"testing"

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
	}
	return protoreflect.Value{}, fmt.Errorf("unsupported value %T", v)
}
