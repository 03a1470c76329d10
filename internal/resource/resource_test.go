package resource

import (
	"errors"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/bqstore/bqstore/internal/apierr"
)

func TestParseWriteStream(t *testing.T) {
	good := map[string]WriteStream{
		"projects/p/datasets/d/tables/t/streams/abc":      {Table{"p", "d", "t"}, "abc"},
		"projects/p/datasets/d/tables/t/streams/_default": {Table{"p", "d", "t"}, DefaultStream},
		"projects/p/datasets/d/tables/t/_default":         {Table{"p", "d", "t"}, DefaultStream},
	}
	for in, want := range good {
		got, err := ParseWriteStream("name", in)
		if err != nil || got != want {
			t.Errorf("ParseWriteStream(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "projects/p", "projects/p/datasets/d/tables/t", "projects/p/datasets/d/tables/t/streams/",
		"projects//datasets/d/tables/t/streams/s", "projects/p/datasets/d/tables/t/other/s", "x/p/datasets/d/tables/t/streams/s"} {
		_, err := ParseWriteStream("name", in)
		var ae *apierr.Error
		if !errors.As(err, &ae) || ae.Code != codes.InvalidArgument {
			t.Errorf("ParseWriteStream(%q) error = %v, want INVALID_ARGUMENT", in, err)
		}
	}
}

func TestParseReadStreamRoundTrip(t *testing.T) {
	r := ReadStream{Project: "p", Location: "us", Session: "s1", ID: "st"}
	got, err := ParseReadStream("name", r.String())
	if err != nil || got != r {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	if _, err := ParseReadStream("name", r.SessionName()); err == nil {
		t.Fatal("a session name parsed as a stream")
	}
}

func TestParseTableAndProject(t *testing.T) {
	if tb, err := ParseTable("parent", "projects/p/datasets/d/tables/t"); err != nil || tb.String() != "projects/p/datasets/d/tables/t" {
		t.Fatalf("ParseTable: %+v %v", tb, err)
	}
	if p, err := ParseProject("parent", "projects/p"); err != nil || p != "p" {
		t.Fatalf("ParseProject: %q %v", p, err)
	}
	if _, err := ParseProject("parent", "projects/"); err == nil {
		t.Fatal("empty project parsed")
	}
}
