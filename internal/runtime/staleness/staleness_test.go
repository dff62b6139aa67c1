package staleness_test

import (
	"testing"
	"time"

	. "gopkg.in/check.v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nacflow/nacflow/internal/runtime/staleness"
)

// Test hooks gocheck into go test.
func Test(t *testing.T) { TestingT(t) }

type TrackerSuite struct{}

var _ = Suite(&TrackerSuite{})

// stale is IsStale without the backoff.
func stale(t *staleness.Tracker, key types.NamespacedName, rv string) bool {
	s, _ := t.IsStale(key, rv)
	return s
}

func (s *TrackerSuite) TestReadTracker(c *C) {
	var t staleness.Tracker
	key := types.NamespacedName{Namespace: "ns", Name: "nab"}
	c.Check(stale(&t, key, "10"), Equals, false, Commentf("nothing written yet"))
	t.Wrote(key, "10")
	c.Check(stale(&t, key, "10"), Equals, true, Commentf("the cache still holds the version read before the write"))
	c.Check(stale(&t, key, "10"), Equals, true, Commentf("still behind"))
	c.Check(stale(&t, key, "12"), Equals, false, Commentf("the cache caught up"))
	c.Check(stale(&t, key, "10"), Equals, false, Commentf("the record is cleared once the cache caught up"))
	t.Wrote(key, "12", "13") // read 12, wrote 13 (finalizer), then 14
	c.Check(stale(&t, key, "12"), Equals, true)
	c.Check(stale(&t, key, "13"), Equals, true, Commentf("an intermediate version of our own is behind too"))
	c.Check(stale(&t, key, "14"), Equals, false)
	t.Wrote(key, "14")
	t.Forget(key)
	c.Check(stale(&t, key, "14"), Equals, false)
}

// A cache that stays behind is looked at again less and less often: 100ms
// doubling per stale read in a row, at most 5s; catching up resets it.
func (s *TrackerSuite) TestStaleBackoff(c *C) {
	var t staleness.Tracker
	key := types.NamespacedName{Namespace: "ns", Name: "nab"}
	t.Wrote(key, "10")
	var waits []time.Duration
	for range 8 {
		ok, after := t.IsStale(key, "10")
		c.Assert(ok, Equals, true)
		waits = append(waits, after)
	}
	c.Check(waits, DeepEquals, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond,
		800 * time.Millisecond, 1600 * time.Millisecond, 3200 * time.Millisecond, 5 * time.Second, 5 * time.Second})
	c.Check(stale(&t, key, "11"), Equals, false)
	t.Wrote(key, "11")
	_, after := t.IsStale(key, "11")
	c.Check(after, Equals, 100*time.Millisecond, Commentf("the backoff starts over"))
}

// A record no reconcile reads again is forgotten a minute later, at the
// next write of any object: an ended operation does not keep one for ever.
func (s *TrackerSuite) TestOldRecordsForgotten(c *C) {
	var t staleness.Tracker
	now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	staleness.SetClock(&t, func() time.Time { return now })
	a, b := types.NamespacedName{Namespace: "t", Name: "a"}, types.NamespacedName{Namespace: "t", Name: "b"}
	t.Wrote(a, "1")
	now = now.Add(30 * time.Second)
	t.Wrote(b, "5")
	c.Check(t.Len(), Equals, 2)
	now = now.Add(29 * time.Second)
	t.Wrote(b, "6")
	c.Check(t.Len(), Equals, 2, Commentf("no sweep within a minute of the last"))
	now = now.Add(2 * time.Second)
	t.Wrote(b, "7")
	c.Check(t.Len(), Equals, 1)
	c.Check(stale(&t, a, "1"), Equals, false)
	c.Check(stale(&t, b, "7"), Equals, true)
}
