package phases_test

import (
	"time"

	. "gopkg.in/check.v1"

	"github.com/nacflow/nacflow/phases"
)

type ScheduleSpecSuite struct{}

var _ = Suite(&ScheduleSpecSuite{})

func (s *ScheduleSpecSuite) TestParseSchedule(c *C) {
	for _, ok := range []string{"*/1 * * * *", "0 2 * * *", "30 3 * * 1-5", "@daily", "@every 6h", "CRON_TZ=Europe/Paris 0 2 * * *"} {
		_, err := phases.ParseSchedule(ok)
		c.Check(err, IsNil, Commentf(ok))
	}
	for expr, msg := range map[string]string{
		"":             `spec.schedule is required: a cron expression such as "0 2 \* \* \*"`,
		"every day":    `spec.schedule: "every day" is not a valid cron expression: .+`,
		"61 * * * *":   `spec.schedule: "61 \* \* \* \*" is not a valid cron expression: .+`,
		"* * * *":      `spec.schedule: "\* \* \* \*" is not a valid cron expression: .+`,
		"0 2 * * * *":  `spec.schedule: "0 2 \* \* \* \*" is not a valid cron expression: .+`,
		"@fortnightly": `spec.schedule: "@fortnightly" is not a valid cron expression: .+`,
	} {
		_, err := phases.ParseSchedule(expr)
		c.Check(err, ErrorMatches, msg, Commentf("%q", expr))
	}
}

func (s *ScheduleSpecSuite) TestCheckScheduleBounds(c *C) {
	from := time.Date(2026, 11, 23, 10, 7, 0, 0, time.UTC)
	night, err := phases.ParseHours("0-6,22-23")
	c.Assert(err, IsNil)
	for _, tc := range []struct {
		expr     string
		interval time.Duration
		hours    map[int]bool
		err      string
	}{
		{"0 2 * * *", time.Hour, night, ""},
		{"*/30 * * * *", time.Hour, nil, `spec.schedule: "\*/30 \* \* \* \*" runs 30m0s apart \(10:30 and 11:00\); the admin's minimum interval between runs is 1h0m0s`},
		{"@every 45m", time.Hour, nil, `spec.schedule: "@every 45m" runs 45m0s apart .*`},
		// Runs far apart most of the time but twice close together.
		{"0,10 3 * * *", 30 * time.Minute, nil, `spec.schedule: "0,10 3 \* \* \*" runs 10m0s apart \(03:00 and 03:10\); .*`},
		{"0 */4 * * *", 0, night, `spec.schedule: "0 \*/4 \* \* \*" runs at 12:00, outside the hours the admin allows \(0-6,22-23, the Velero server's time zone\)`},
		{"0 23 * * *", 0, night, ""},
		// Both bounds broken: the interval is reported.
		{"*/5 * * * *", time.Hour, night, `spec.schedule: "\*/5 \* \* \* \*" runs 5m0s apart .*`},
		{"*/5 * * * *", 0, nil, ""},
	} {
		sched, err := phases.ParseSchedule(tc.expr)
		c.Assert(err, IsNil)
		err = phases.CheckScheduleBounds(tc.expr, sched, tc.interval, tc.hours, "0-6,22-23", from)
		if tc.err == "" {
			c.Check(err, IsNil, Commentf(tc.expr))
		} else {
			c.Check(err, ErrorMatches, tc.err, Commentf(tc.expr))
		}
	}
}

func (s *ScheduleSpecSuite) TestParseHours(c *C) {
	h, err := phases.ParseHours("0-2, 22")
	c.Assert(err, IsNil)
	c.Check(h, DeepEquals, map[int]bool{0: true, 1: true, 2: true, 22: true})
	h, err = phases.ParseHours("")
	c.Check(err, IsNil)
	c.Check(h, IsNil)
	for _, bad := range []string{"24", "5-3", "a-b", "-1", "1,,2"} {
		_, err := phases.ParseHours(bad)
		c.Check(err, NotNil, Commentf(bad))
	}
}
