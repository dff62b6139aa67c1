package staleness

import "time"

// SetClock makes t read the time from now.
func SetClock(t *Tracker, now func() time.Time) { t.now = now }
