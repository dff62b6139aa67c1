package phases

import (
	"sync"
	"time"
)

// admissionTTL is how long an admission counts as active without the cache
// showing it: long enough for the admitted object's running plan to reach
// the cache (milliseconds normally), short enough that an admission whose
// status write failed stops counting soon.
const admissionTTL = time.Minute

// admissions is LimitActiveOperations' ledger: per namespace and kind, the
// operations it admitted recently, so that operations checked at the same
// moment on parallel workers — none of which sees the others' plans in the
// cache yet — cannot all pass the limit. Checking and recording happen under
// one lock. It is controller state injected into the function, like the
// queue estimator; a restart empties it, and the cache then shows what runs.
type admissions struct {
	mu  sync.Mutex
	now func() time.Time
	// admitted maps namespace/kind to object name to admission time.
	admitted map[string]map[string]time.Time
}

func newAdmissions() *admissions {
	return &admissions{now: time.Now, admitted: map[string]map[string]time.Time{}}
}

// planActivity is what the cache shows of an operation's plan.
type planActivity int

const (
	planNone   planActivity = iota // no plan recorded yet
	planActive                     // pending or running
	planEnded                      // complete, failed or superseded
)

// admit decides under the ledger's lock whether name may start. cached maps
// the names the cache knows in the namespace to what it shows of their
// plans. Counted are the other names whose plan is active, plus the other
// names admitted within admissionTTL whose plan the cache does not show
// ended; when there are fewer than max, name is recorded as admitted. It
// returns the count and whether name was admitted.
func (a *admissions) admit(key, name string, cached map[string]planActivity, max int) (active int, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	ledger := a.admitted[key]
	if ledger == nil {
		ledger = map[string]time.Time{}
		a.admitted[key] = ledger
	}
	for n, at := range ledger {
		if now.Sub(at) > admissionTTL || cached[n] == planEnded {
			delete(ledger, n)
		}
	}
	counted := map[string]bool{}
	for n, p := range cached {
		if p == planActive && n != name {
			counted[n] = true
		}
	}
	for n := range ledger {
		if n != name {
			counted[n] = true
		}
	}
	if len(counted) >= max {
		return len(counted), false
	}
	ledger[name] = now
	return len(counted), true
}
