package controllers

import (
	. "gopkg.in/check.v1"
	"k8s.io/apimachinery/pkg/types"
)

// TrackerSuite runs from the package's single gocheck entry point, Test in
// suite_test.go (a second one would run every suite twice).

type TrackerSuite struct{}

var _ = Suite(&TrackerSuite{})

func (s *TrackerSuite) TestReadTracker(c *C) {
	var t readTracker
	key := types.NamespacedName{Namespace: "ns", Name: "nab"}
	c.Check(t.isStale(key, "10"), Equals, false, Commentf("nothing written yet"))
	t.wrote(key, "10")
	c.Check(t.isStale(key, "10"), Equals, true, Commentf("the cache still holds the version read before the write"))
	c.Check(t.isStale(key, "10"), Equals, true, Commentf("still behind"))
	c.Check(t.isStale(key, "12"), Equals, false, Commentf("the cache caught up"))
	c.Check(t.isStale(key, "10"), Equals, false, Commentf("the record is cleared once the cache caught up"))
	t.wrote(key, "12", "13") // read 12, wrote 13 (finalizer), then 14
	c.Check(t.isStale(key, "12"), Equals, true)
	c.Check(t.isStale(key, "13"), Equals, true, Commentf("an intermediate version of our own is behind too"))
	c.Check(t.isStale(key, "14"), Equals, false)
	t.wrote(key, "14")
	t.forget(key)
	c.Check(t.isStale(key, "14"), Equals, false)
}
