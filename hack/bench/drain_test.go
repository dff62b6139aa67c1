package main

import (
	"testing"

	"gopkg.in/check.v1"

	"github.com/nacflow/nacflow/phases"
)

// Test hooks gocheck into go test (imported by name: the bench has its
// own Result).
func Test(t *testing.T) { check.TestingT(t) }

type DrainSuite struct{}

var _ = check.Suite(&DrainSuite{})

// TestQueueRefreshWrites: one completion with 999 waiting rewrites the
// first five and nothing else; serving a queue of 1,000 one at a time costs
// about 15 writes per backup (at most 15,000 in all), not ~500 (n²/2 in
// all, as when every waiting NAB is rewritten at every completion).
func (s *DrainSuite) TestQueueRefreshWrites(c *check.C) {
	first, total := simulateSerialDrain(1000)
	c.Check(first, check.Equals, phases.ExactPositions) // positions 2..6 moved to 1..5
	c.Check(total <= 15000, check.Equals, true, check.Commentf("serial drain of 1,000: %d position writes", total))
	c.Check(total > 1000, check.Equals, true, check.Commentf("serial drain of 1,000: %d position writes", total))
	c.Logf("position writes: one completion with 999 waiting %d, serial drain of 1,000 %d (n²/2 = 500,000)", first, total)
}
