package phases

import (
	"time"

	velerov1 "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	. "gopkg.in/check.v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type RecentInternalSuite struct{}

var _ = Suite(&RecentInternalSuite{})

// What was created counts as "just created" for recentTTL only, and
// expired entries are dropped (at most once per TTL).
func (s *RecentInternalSuite) TestExpiry(c *C) {
	now := time.Unix(1000, 0)
	r := newRecentCreates()
	r.now = func() time.Time { return now }
	b := func(name string) *velerov1.Backup {
		return &velerov1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: "oadp", Name: name}}
	}
	r.add("Velero Backup", b("one"))
	c.Check(r.has("Velero Backup", "oadp", "one"), Equals, true)
	c.Check(r.has("Velero Restore", "oadp", "one"), Equals, false, Commentf("another kind"))
	c.Check(r.has("Velero Backup", "other", "one"), Equals, false, Commentf("another namespace"))
	now = now.Add(recentTTL + time.Second)
	c.Check(r.has("Velero Backup", "oadp", "one"), Equals, false, Commentf("expired"))
	r.add("Velero Backup", b("two"))
	c.Check(r.seen, HasLen, 1, Commentf("the expired entry was dropped"))
	c.Check(r.has("Velero Backup", "oadp", "two"), Equals, true)
	var nilRecent *recentCreates
	nilRecent.add("Velero Backup", b("x"))
	c.Check(nilRecent.has("Velero Backup", "oadp", "x"), Equals, false)
}
