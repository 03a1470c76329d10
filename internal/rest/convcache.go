package rest

import (
	"sync"

	"github.com/bqstore/bqstore/internal/schema"
)

// converters keeps idle rowConverters for reuse, by table, schema version
// and ignoreUnknownValues: building one (the descriptor, the JSON plan and
// the proto row decoder) costs about 100 µs and 80 KB for a 6-column
// table, far more than one row (BenchmarkInsertAllConverter), and clients
// such as Go's Inserter often send a few rows at a time. A converter's
// decoder serves one request at a time, so get hands a converter out
// exclusively and put returns it. At most maxIdleConverters are kept
// (docs/memory.md); past it an arbitrary one is dropped. A new schema
// version or a recreated table (a new id) gets new converters; the old
// ones go when evicted.
type converters struct {
	mu   sync.Mutex
	idle map[convKey][]*rowConverter
	n    int
}

type convKey struct {
	table   string
	version int
	ignore  bool
}

const maxIdleConverters = 64

func (c *converters) get(k convKey, sch *schema.Schema) (*rowConverter, error) {
	c.mu.Lock()
	if l := c.idle[k]; len(l) > 0 {
		conv := l[len(l)-1]
		l[len(l)-1] = nil
		c.idle[k] = l[:len(l)-1]
		c.n--
		c.mu.Unlock()
		return conv, nil
	}
	c.mu.Unlock()
	return newRowConverter(sch, k.ignore)
}

func (c *converters) put(k convKey, conv *rowConverter) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.idle == nil {
		c.idle = map[convKey][]*rowConverter{}
	}
	for c.n >= maxIdleConverters {
		for victim, l := range c.idle {
			c.n -= len(l)
			delete(c.idle, victim)
			break
		}
	}
	c.idle[k] = append(c.idle[k], conv)
	c.n++
}
