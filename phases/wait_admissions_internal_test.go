package phases

import (
	"fmt"
	"sync"
	"time"

	. "gopkg.in/check.v1"
)

type AdmissionsSuite struct{}

var _ = Suite(&AdmissionsSuite{})

// Operations checked at once, none visible in the cache yet, pass the limit
// only up to max (the race of parallel workers).
func (s *AdmissionsSuite) TestParallelBurstRespectsTheLimit(c *C) {
	a := newAdmissions()
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cached := map[string]planActivity{}
			for j := range 20 {
				cached[fmt.Sprintf("nab-%d", j)] = planNone // created, no plan written yet
			}
			if _, ok := a.admit("ns/NonAdminBackups", fmt.Sprintf("nab-%d", i), cached, 3); ok {
				mu.Lock()
				admitted++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	c.Check(admitted, Equals, 3)
}

// An admission stops counting once the cache shows its plan ended, or after
// admissionTTL; a re-check of an admitted name does not count itself.
func (s *AdmissionsSuite) TestAdmissionsEnd(c *C) {
	now := time.Unix(1000, 0)
	a := newAdmissions()
	a.now = func() time.Time { return now }
	_, ok := a.admit("k", "one", nil, 1)
	c.Assert(ok, Equals, true)
	active, ok := a.admit("k", "two", map[string]planActivity{"one": planNone}, 1)
	c.Check(ok, Equals, false)
	c.Check(active, Equals, 1)
	_, ok = a.admit("k", "one", nil, 1)
	c.Check(ok, Equals, true, Commentf("its own admission does not count against it"))
	_, ok = a.admit("k", "two", map[string]planActivity{"one": planEnded}, 1)
	c.Check(ok, Equals, true, Commentf("one ended"))
	_, ok = a.admit("k", "three", map[string]planActivity{"one": planEnded}, 1)
	c.Check(ok, Equals, false, Commentf("two was admitted"))
	now = now.Add(admissionTTL + time.Second)
	_, ok = a.admit("k", "three", map[string]planActivity{"two": planNone}, 1)
	c.Check(ok, Equals, true, Commentf("two's admission expired and the cache shows no running plan"))
	_, ok = a.admit("other", "x", map[string]planActivity{"y": planActive}, 1)
	c.Check(ok, Equals, false, Commentf("a running plan in the cache counts"))
}
