package rest_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"

	"github.com/bqstore/bqstore/internal/catalog"
	"github.com/bqstore/bqstore/internal/rest"
)

type env struct {
	dir    string
	cat    *catalog.Catalog
	srv    *httptest.Server
	client *bigquery.Client
}

// newEnv serves the REST handler over a temp-dir catalog on 127.0.0.1 and
// returns an official client for project "p".
func newEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	cat, err := catalog.Open(dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := rest.New(cat, rest.Options{Stats: func(id string) (int64, int64, bool) {
		tb, err := cat.TableByID(id)
		if err != nil {
			t.Errorf("Stats called with unknown id %s", id)
			return 0, 0, false
		}
		return int64(len(tb.Schema().Fields)), 100, true // something we can check
	}})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := bigquery.NewClient(context.Background(), "p", option.WithEndpoint(srv.URL), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &env{dir: dir, cat: cat, srv: srv, client: c}
}

func wantCode(t *testing.T, err error, code int, msg string) {
	t.Helper()
	var ge *googleapi.Error
	if !errors.As(err, &ge) {
		t.Fatalf("got %v (%T), want a *googleapi.Error with code %d", err, err, code)
	}
	if ge.Code != code {
		t.Fatalf("code = %d (%s), want %d", ge.Code, ge.Message, code)
	}
	if msg != "" && !strings.Contains(ge.Message, msg) {
		t.Fatalf("message %q does not contain %q", ge.Message, msg)
	}
}

// allTypes is a schema with every type, mode and attribute, nested.
func allTypes() bigquery.Schema {
	return bigquery.Schema{
		{Name: "s", Type: bigquery.StringFieldType, Required: true, MaxLength: 20, Description: "a string"},
		{Name: "b", Type: bigquery.BytesFieldType, MaxLength: 8},
		{Name: "i", Type: bigquery.IntegerFieldType, DefaultValueExpression: "42"},
		{Name: "f", Type: bigquery.FloatFieldType, Repeated: true},
		{Name: "n", Type: bigquery.NumericFieldType, Precision: 10, Scale: 2},
		{Name: "bn", Type: bigquery.BigNumericFieldType, Precision: 50, Scale: 20},
		{Name: "bo", Type: bigquery.BooleanFieldType},
		{Name: "ts", Type: bigquery.TimestampFieldType, DefaultValueExpression: "CURRENT_TIMESTAMP()"},
		{Name: "d", Type: bigquery.DateFieldType},
		{Name: "t", Type: bigquery.TimeFieldType},
		{Name: "dt", Type: bigquery.DateTimeFieldType},
		{Name: "g", Type: bigquery.GeographyFieldType},
		{Name: "j", Type: bigquery.JSONFieldType},
		{Name: "iv", Type: bigquery.IntervalFieldType},
		{Name: "r", Type: bigquery.RangeFieldType, RangeElementType: &bigquery.RangeElementType{Type: bigquery.TimestampFieldType}},
		{Name: "rec", Type: bigquery.RecordFieldType, Repeated: true, Schema: bigquery.Schema{
			{Name: "x", Type: bigquery.IntegerFieldType, Required: true},
			{Name: "inner", Type: bigquery.RecordFieldType, Schema: bigquery.Schema{
				{Name: "y", Type: bigquery.StringFieldType, Repeated: true},
				{Name: "rd", Type: bigquery.RangeFieldType, RangeElementType: &bigquery.RangeElementType{Type: bigquery.DateFieldType}},
			}},
		}},
	}
}

func TestDatasetsWithOfficialClient(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	ds := e.client.Dataset("d1")
	if err := ds.Create(ctx, &bigquery.DatasetMetadata{Location: "EU", Description: "first", Labels: map[string]string{"env": "dev"}}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, ds.Create(ctx, nil), 409, "Already Exists: Dataset p:d1")
	md, err := ds.Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if md.Location != "EU" || md.Description != "first" || md.Labels["env"] != "dev" || md.ETag == "" ||
		md.CreationTime.IsZero() || md.LastModifiedTime.IsZero() || md.FullID != "p:d1" {
		t.Fatalf("metadata %+v", md)
	}
	_, err = e.client.Dataset("nope").Metadata(ctx)
	wantCode(t, err, 404, "Not found: Dataset p:nope")

	// Update: stale etag, then a good one; labels set and deleted.
	upd := bigquery.DatasetMetadataToUpdate{Description: "second"}
	upd.SetLabel("team", "x")
	upd.DeleteLabel("env")
	_, err = ds.Update(ctx, upd, "stale")
	wantCode(t, err, 412, "")
	md2, err := ds.Update(ctx, upd, md.ETag)
	if err != nil {
		t.Fatal(err)
	}
	if md2.Description != "second" || !reflect.DeepEqual(md2.Labels, map[string]string{"team": "x"}) || md2.ETag == md.ETag {
		t.Fatalf("updated %+v", md2)
	}

	// List with paging.
	for _, name := range []string{"d2", "d3", "d4"} {
		if err := e.client.Dataset(name).Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	it := e.client.Datasets(ctx)
	it.PageInfo().MaxSize = 3
	var names []string
	for {
		d, err := it.Next()
		if err == iterator.Done {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, d.DatasetID)
	}
	if strings.Join(names, ",") != "d1,d2,d3,d4" {
		t.Fatalf("datasets %v", names)
	}
	it = e.client.Datasets(ctx)
	it.Filter = "labels.team:x"
	if d, err := it.Next(); err != nil || d.DatasetID != "d1" {
		t.Fatalf("filtered: %v %v", d, err)
	}
	if _, err := it.Next(); err != iterator.Done {
		t.Fatalf("filter matched more: %v", err)
	}

	// Delete: non-empty, with contents, missing.
	if err := ds.Table("t").Create(ctx, &bigquery.TableMetadata{Schema: bigquery.Schema{{Name: "a", Type: bigquery.StringFieldType}}}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, ds.Delete(ctx), 400, "still in use")
	if err := ds.DeleteWithContents(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = ds.Metadata(ctx)
	wantCode(t, err, 404, "")
	wantCode(t, ds.Delete(ctx), 404, "Not found: Dataset p:d1")
	if _, err := e.cat.Table("p", "d1", "t"); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("table survived DeleteWithContents: %v", err)
	}
	if err := e.client.Dataset("d2").Delete(ctx); err != nil {
		t.Fatal(err)
	}
	// Invalid names.
	wantCode(t, e.client.Dataset("bad-name").Create(ctx, nil), 400, "Invalid dataset ID")
	bad, err := bigquery.NewClient(ctx, "Bad_Project", option.WithEndpoint(e.srv.URL), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	wantCode(t, bad.Dataset("d").Create(ctx, nil), 400, "Invalid project ID")
}

func TestTablesWithOfficialClient(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	ds := e.client.Dataset("d")
	if err := ds.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	tb := ds.Table("all types")
	exp := time.Now().Add(48 * time.Hour).Truncate(time.Millisecond)
	if err := tb.Create(ctx, &bigquery.TableMetadata{Schema: allTypes(), Description: "every type", Name: "friendly",
		Labels: map[string]string{"k": "v"}, ExpirationTime: exp}); err != nil {
		t.Fatal(err)
	}
	md, err := tb.Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(md.Schema, allTypes()) {
		t.Errorf("schema read back differs:\n got %s\nwant %s", dump(md.Schema), dump(allTypes()))
	}
	if md.FullID != "p:d.all types" || md.Type != bigquery.RegularTable || md.Location != "US" || md.Description != "every type" ||
		md.Name != "friendly" || md.Labels["k"] != "v" || !md.ExpirationTime.Equal(exp) || md.ETag == "" ||
		md.NumRows != uint64(len(allTypes())) || md.NumBytes != 100 || md.CreationTime.IsZero() || md.LastModifiedTime.IsZero() {
		t.Errorf("metadata %+v", md)
	}
	wantCode(t, tb.Create(ctx, &bigquery.TableMetadata{Schema: allTypes()}), 409, "Already Exists: Table p:d.all types")
	wantCode(t, e.client.Dataset("nods").Table("t").Create(ctx, nil), 404, "Not found: Dataset p:nods")
	_, err = ds.Table("missing").Metadata(ctx)
	wantCode(t, err, 404, "Not found: Table p:d.missing")
	wantCode(t, ds.Table("bad/name").Create(ctx, nil), 400, "Invalid table ID")
	wantCode(t, ds.Table("bad.name").Create(ctx, nil), 400, "Invalid table ID")
	wantCode(t, ds.Table("t2").Create(ctx, &bigquery.TableMetadata{Schema: bigquery.Schema{{Name: "a", Type: bigquery.StringFieldType}, {Name: "A", Type: bigquery.StringFieldType}}}), 400, "already exists")
	wantCode(t, ds.Table("t2").Create(ctx, &bigquery.TableMetadata{Schema: bigquery.Schema{{Name: "r", Type: bigquery.RecordFieldType}}}), 400, "has no schema")

	// Schema evolution through Update (PATCH with If-Match).
	grown := append(allTypes(), &bigquery.FieldSchema{Name: "added", Type: bigquery.StringFieldType})
	grown[15].Schema = append(grown[15].Schema, &bigquery.FieldSchema{Name: "added_nested", Type: bigquery.IntegerFieldType, Repeated: true})
	grown[0].Required = false // relax
	_, err = tb.Update(ctx, bigquery.TableMetadataToUpdate{Schema: grown}, "stale-etag")
	wantCode(t, err, 412, "")
	md2, err := tb.Update(ctx, bigquery.TableMetadataToUpdate{Schema: grown}, md.ETag)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(md2.Schema, grown) || md2.ETag == md.ETag {
		t.Fatalf("after update: %s", dump(md2.Schema))
	}
	for _, tc := range []struct {
		name   string
		mutate func(s bigquery.Schema) bigquery.Schema
		msg    string
	}{
		{"drop", func(s bigquery.Schema) bigquery.Schema { return s[1:] }, "Field s is missing"},
		{"drop nested", func(s bigquery.Schema) bigquery.Schema { s[15].Schema = s[15].Schema[1:]; return s }, "Field rec.x is missing"},
		{"retype", func(s bigquery.Schema) bigquery.Schema { s[2].Type = bigquery.StringFieldType; return s }, "Field i has changed type from INTEGER to STRING"},
		{"rename", func(s bigquery.Schema) bigquery.Schema { s[1].Name = "bb"; return s }, "Field b is missing"},
		{"add required", func(s bigquery.Schema) bigquery.Schema {
			return append(s, &bigquery.FieldSchema{Name: "req", Type: bigquery.StringFieldType, Required: true})
		}, "(field: req)"},
		{"add required nested", func(s bigquery.Schema) bigquery.Schema {
			s[15].Schema[1].Schema = append(s[15].Schema[1].Schema, &bigquery.FieldSchema{Name: "q", Type: bigquery.DateFieldType, Required: true})
			return s
		}, "(field: rec.inner.q)"},
		{"tighten", func(s bigquery.Schema) bigquery.Schema { s[0].Required = true; return s }, "Field s has changed mode"},
	} {
		t.Run("change="+tc.name, func(t *testing.T) {
			cur, err := tb.Metadata(ctx)
			if err != nil {
				t.Fatal(err)
			}
			s := tc.mutate(deepCopy(cur.Schema))
			_, err = tb.Update(ctx, bigquery.TableMetadataToUpdate{Schema: s}, "")
			wantCode(t, err, 400, tc.msg)
		})
	}
	// Metadata-only update: description, labels, expiration cleared.
	upd := bigquery.TableMetadataToUpdate{Description: "changed", ExpirationTime: bigquery.NeverExpire}
	upd.DeleteLabel("k")
	upd.SetLabel("n", "1")
	md3, err := tb.Update(ctx, upd, "")
	if err != nil {
		t.Fatal(err)
	}
	if md3.Description != "changed" || !md3.ExpirationTime.IsZero() || !reflect.DeepEqual(md3.Labels, map[string]string{"n": "1"}) || !reflect.DeepEqual(md3.Schema, grown) {
		t.Fatalf("after metadata update %+v", md3)
	}
	_, err = ds.Table("missing").Update(ctx, upd, "")
	wantCode(t, err, 404, "Not found: Table p:d.missing")
	cat, _ := e.cat.Table("p", "d", "all types")
	if len(cat.Schemas) != 2 {
		t.Fatalf("%d schema versions, want 2", len(cat.Schemas))
	}

	// List with paging.
	for _, n := range []string{"b", "c", "d", "e"} {
		if err := ds.Table(n).Create(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	it := ds.Tables(ctx)
	it.PageInfo().MaxSize = 2
	var names []string
	for {
		tt, err := it.Next()
		if err == iterator.Done {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tt.TableID)
	}
	if strings.Join(names, ",") != "all types,b,c,d,e" {
		t.Fatalf("tables %q", names)
	}
	_, err = e.client.Dataset("nods").Tables(ctx).Next()
	wantCode(t, err, 404, "Not found: Dataset p:nods")

	// A table created without a schema.
	emd, err := ds.Table("b").Metadata(ctx)
	if err != nil || len(emd.Schema) != 0 {
		t.Fatalf("schemaless table %+v %v", emd, err)
	}

	// Delete.
	if err := tb.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	wantCode(t, tb.Delete(ctx), 404, "Not found: Table p:d.all types")
	_, err = tb.Metadata(ctx)
	wantCode(t, err, 404, "")

	// Everything survives a reopen of the catalog directory.
	cat2, err := catalog.Open(e.dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l, err := cat2.ListTables("p", "d"); err != nil || len(l) != 4 {
		t.Fatalf("after reopen: %d tables, %v", len(l), err)
	}
}

func deepCopy(s bigquery.Schema) bigquery.Schema {
	out := make(bigquery.Schema, len(s))
	for i, f := range s {
		c := *f
		c.Schema = deepCopy(f.Schema)
		out[i] = &c
	}
	return out
}

func dump(s bigquery.Schema) string {
	b, _ := s.ToJSONFields()
	return string(b)
}

// TestConcurrentConditionalUpdates races conditional updates carrying the
// same etag: exactly one wins, the others get 412.
func TestConcurrentConditionalUpdates(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	ds := e.client.Dataset("d")
	if err := ds.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	tb := ds.Table("t")
	if err := tb.Create(ctx, &bigquery.TableMetadata{Schema: bigquery.Schema{{Name: "a", Type: bigquery.StringFieldType}}}); err != nil {
		t.Fatal(err)
	}
	md, err := tb.Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	errs := make(chan error, n)
	for i := range n {
		go func() {
			s := append(deepCopy(md.Schema), &bigquery.FieldSchema{Name: "c" + strings.Repeat("x", i), Type: bigquery.IntegerFieldType})
			_, err := tb.Update(ctx, bigquery.TableMetadataToUpdate{Schema: s}, md.ETag)
			errs <- err
		}()
	}
	won := 0
	for range n {
		err := <-errs
		if err == nil {
			won++
			continue
		}
		wantCode(t, err, 412, "")
	}
	if won != 1 {
		t.Fatalf("%d conditional updates succeeded, want 1", won)
	}
	got, err := tb.Metadata(ctx)
	if err != nil || len(got.Schema) != 2 {
		t.Fatalf("schema after the race: %v %v", got, err)
	}
}

// TestBigQueryV2Prefix drives the server through the /bigquery/v2 prefix,
// as the Node client and the Go client with that endpoint call it.
func TestBigQueryV2Prefix(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	c, err := bigquery.NewClient(ctx, "p", option.WithEndpoint(e.srv.URL+"/bigquery/v2/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Dataset("d").Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Dataset("d").Table("t").Create(ctx, &bigquery.TableMetadata{Schema: allTypes()}); err != nil {
		t.Fatal(err)
	}
	// The other client sees it under the plain prefix.
	md, err := e.client.Dataset("d").Table("t").Metadata(ctx)
	if err != nil || !reflect.DeepEqual(md.Schema, allTypes()) {
		t.Fatalf("%v %v", md, err)
	}
	if err := c.Dataset("d").Table("t").Delete(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = c.Dataset("d").Table("t").Metadata(ctx)
	wantCode(t, err, 404, "Not found: Table p:d.t")
}
