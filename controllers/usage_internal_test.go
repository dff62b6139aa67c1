package controllers

import (
	"fmt"
	"time"

	. "gopkg.in/check.v1"
	"k8s.io/apimachinery/pkg/types"
)

type UsageMeterSuite struct{}

var _ = Suite(&UsageMeterSuite{})

// The meter hands out turns at its rate, in the order backups asked, each
// reserved once: a backup asking again before its turn is told the same
// moment, not given a new place; a backup whose measurement began needs no
// further turn; one that failed waits a minute, then twice as long each
// failure in a row, at most an hour.
func (s *UsageMeterSuite) TestTurnsAtTheRate(c *C) {
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	m := NewUsageMeter(nil, "oadp", 2, 2) // two a second, two at once
	m.now = func() time.Time { return now }
	var waits []time.Duration
	for i := range 6 {
		waits = append(waits, m.turn(types.UID(fmt.Sprint(i))))
	}
	c.Check(waits, DeepEquals, []time.Duration{0, 0, 500 * time.Millisecond, time.Second, 1500 * time.Millisecond, 2 * time.Second})
	c.Check(m.turn("3"), Equals, time.Second, Commentf("asking again keeps the place"))
	now = now.Add(time.Second)
	c.Check(m.turn("3"), Equals, time.Duration(0))
	c.Check(m.turn("3"), Equals, time.Duration(0), Commentf("begun: no further turn"))
	c.Check(m.turn("4"), Equals, 500*time.Millisecond)
	c.Check(m.fail("3"), Equals, time.Minute)
	c.Check(m.turn("3"), Equals, time.Minute)
	now = now.Add(time.Minute)
	c.Check(m.turn("3"), Equals, time.Duration(0), Commentf("tried again after a minute"))
	var retries []time.Duration
	for range 8 {
		retries = append(retries, m.fail("3"))
	}
	c.Check(retries, DeepEquals, []time.Duration{2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 16 * time.Minute, 32 * time.Minute,
		time.Hour, time.Hour, time.Hour})
	m.forget("3")
	c.Check(m.fail("3"), Equals, time.Minute, Commentf("a measurement that succeeded starts the backoff again"))
	m.forget("3")
	c.Check(m.due, HasLen, 3) // 2, 4 and 5 wait for their turn
	c.Check(m.started, HasLen, 2)
	c.Check(m.failed, HasLen, 0)
	c.Check(NewUsageMeter(nil, "oadp", 0, 10), IsNil, Commentf("rate 0: off"))
}
