package recvbudget

// Orphans: admissions of streams reset while their message is handled.
//
// A message received whole is being handed to its handler: gRPC decodes
// it (the codec's contiguous copy, then the decoded request) while the
// handler reads it, and the handler keeps it until it calls Done. If the
// client resets the stream then (or the stream stalls on a later
// message), gRPC cancels the handler, but the decoding already under way
// goes on, and the memory with it. Returning the admission at the reset
// would let a client send a large message, reset, and send the next
// while the first is still being decoded outside the budget
// (TestResetWhileDecoding). So the admissions of messages received whole
// and not yet Done outlive their stream as the connection's orphans,
// returned when:
//   - the handler is done with the message (Done, or for other methods
//     its decoding: done finds it by length, as it finds any other);
//   - an RPC of the connection ends cancelled without a message of its
//     own to return: the reset stream's handler never got the message
//     (it was cancelled while reading it), so nothing of it is left. The
//     stats handler cannot tell which stream an RPC is, so the oldest
//     orphan goes: when several streams of one connection are reset at
//     once, an orphan may go while its own message is still decoded, at
//     worst as early as before orphans existed;
//   - Options.Grace after the reset, whatever happened: gRPC's decoding
//     of a 16 MiB message takes milliseconds, so an orphan still there
//     belongs to a handler that never got its message;
//   - the connection closes.

// orphanLocked returns which of adms, the admissions of a stream that
// ends, may be returned now: all, unless the stream was reset (reset) and
// their messages were received whole; those become orphans.
// REQUIRES: c.mu held, adms' stall timers stopped.
func (c *Conn) orphanLocked(adms []*admission, reset bool) (rel []*admission) {
	for _, a := range adms {
		if !reset || !a.received || c.mu.closed {
			rel = append(rel, a)
			continue
		}
		c.mu.orphans = append(c.mu.orphans, a)
		a.timer = c.g.opts.AfterFunc(c.g.opts.Grace, func() { c.releaseOrphan(a) })
	}
	return rel
}

// claimOrphanLocked takes the oldest orphan of length n (nil if none).
// REQUIRES: c.mu held.
func (c *Conn) claimOrphanLocked(n int64) *admission {
	for _, a := range c.mu.orphans {
		if a.length == n {
			c.dropOrphanLocked(a)
			return a
		}
	}
	return nil
}

// dropOrphanLocked removes a from the orphans and stops its timer; it
// reports whether a was one.
// REQUIRES: c.mu held.
func (c *Conn) dropOrphanLocked(a *admission) bool {
	for i, o := range c.mu.orphans {
		if o == a {
			c.mu.orphans = append(c.mu.orphans[:i], c.mu.orphans[i+1:]...)
			c.stopTimersLocked([]*admission{a})
			return true
		}
	}
	return false
}

// releaseOrphan returns orphan a, if it still is one (its grace passed).
func (c *Conn) releaseOrphan(a *admission) {
	c.mu.Lock()
	found := c.dropOrphanLocked(a)
	c.mu.Unlock()
	if found {
		c.g.release(a)
	}
}

// endCancelled returns the oldest orphan, if any: an RPC of the
// connection ended cancelled without a message to return.
func (c *Conn) endCancelled() {
	c.mu.Lock()
	var a *admission
	if len(c.mu.orphans) > 0 {
		a = c.mu.orphans[0]
		c.dropOrphanLocked(a)
	}
	c.mu.Unlock()
	if a != nil {
		c.g.release(a)
	}
}
