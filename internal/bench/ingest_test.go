package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
)

func TestEventEncoder(t *testing.T) {
	for _, size := range []int{150, 1200, 4096} {
		enc := newEventEncoder(size)
		for _, id := range []int64{0, 7, 123456789012} {
			b := enc.encode(id, 1_700_000_000_000_000)
			if len(b) != size {
				t.Errorf("size %d id %d: event has %d bytes", size, id, len(b))
			}
			var ev struct {
				ID      int64   `json:"id"`
				TS      int64   `json:"ts"`
				Key     string  `json:"key"`
				Cat     string  `json:"cat"`
				Value   float64 `json:"value"`
				Payload string  `json:"payload"`
			}
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&ev); err != nil {
				t.Fatalf("size %d id %d: %v", size, id, err)
			}
			if ev.ID != id || ev.TS != 1_700_000_000_000_000 || ev.Key != fmt.Sprintf("key-%032d", id) || ev.Cat == "" || len(ev.Payload) == 0 {
				t.Errorf("size %d id %d: decoded id %d ts %d key %q cat %q", size, id, ev.ID, ev.TS, ev.Key, ev.Cat)
			}
		}
	}
}

func TestLatencies(t *testing.T) {
	times := [][]int64{{100, 200, 300}, {150}}
	commits := []commitRange{
		{part: 0, from: 0, to: 2, at: 1000},
		{part: 1, from: 0, to: 1, at: 1150},
		{part: 0, from: 2, to: 3, at: 2300},
	}
	got, err := latencies(commits, times)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{900e-9, 800e-9, 1000e-9, 2000e-9}
	if len(got) != len(want) {
		t.Fatalf("latencies %v, want %v", got, want)
	}
	for i := range want {
		if diff := got[i] - want[i]; diff > 1e-12 || diff < -1e-12 {
			t.Fatalf("latencies %v, want %v", got, want)
		}
	}
	if _, err := latencies(commits[:2], times); err == nil {
		t.Fatal("offset 2 of partition 0 is uncommitted, latencies did not say so")
	}
}

func TestHeapShares(t *testing.T) {
	// Two records of large objects (sampled with probability ~1) and one of
	// a producer allocation; rate 512 KiB (heap/1048576).
	prof := `heap profile: 3: 30000000 [3: 30000000] @ heap/1048576
1: 20000000 [1: 20000000] @ 0x1 0x2
#	0x1	github.com/twmb/franz-go/pkg/kfake.(*memFile).Write+0x1	kfake/persist_fs.go:240
#	0x2	github.com/bqstore/bqstore/ingest.(*worker).run+0x1	ingest/worker.go:1

1: 8000000 [1: 8000000] @ 0x3
#	0x3	github.com/bqstore/bqstore/ingest.(*worker).batch+0x1	ingest/worker.go:2

1: 2000000 [1: 2000000] @ 0x4 0x5
#	0x4	github.com/bqstore/bqstore/internal/bench.(*eventEncoder).encode+0x1	internal/bench/ingest.go:1
#	0x5	github.com/bqstore/bqstore/internal/bench.produce+0x1	internal/bench/ingest.go:2
`
	pl, kf := heapShares([]byte(prof))
	if kf < 20000000 || kf > 20000010 || pl < 8000000 || pl > 8001000 {
		t.Fatalf("pipeline %d, kfake %d: want about 8 MB and 20 MB (the producer's 2 MB in neither)", pl, kf)
	}
}
