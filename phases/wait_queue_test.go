package phases_test

import (
	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/phases"
)

type QueueSuite struct{}

var _ = Suite(&QueueSuite{})

// TestPositionRule: which recorded positions are rewritten for a given
// true position (an estimate, written O(log n) times).
func (s *QueueSuite) TestPositionRule(c *C) {
	for _, tc := range []struct {
		recorded, now int
		write         bool
	}{
		{0, 500, true},    // none recorded
		{500, 500, false}, // unchanged
		{500, 499, false}, // drifted by 1 of 500
		{500, 334, false}, // 166 < 167
		{500, 333, true},  // a third, rounded up
		{100, 67, false},
		{100, 66, true},
		{20, 14, false}, // 6 < 7
		{20, 13, true},
		{8, 6, false}, // 2 < 3 (a third of 8, rounded up)
		{8, 5, true},  // the first five are exact
		{6, 5, true},
		{3, 2, true},
		{300, 400, true},  // an earlier Backup appeared: moved back by a third
		{300, 399, false}, // 99 < 100
	} {
		c.Check(phases.PositionStale(tc.recorded, tc.now), Equals, tc.write, Commentf("recorded %d, now %d", tc.recorded, tc.now))
	}
}
