package cli

import (
	"bytes"

	. "gopkg.in/check.v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/nacflow/nacflow/api/v1alpha1"
)

type KindsSuite struct{}

var _ = Suite(&KindsSuite{})

// TestTenantGroups: every NAC kind the registry gives a command group
// (Kind.Command) has a builder, and no builder is for another kind; the
// groups are named by the registry, with the kind's short name as an
// alias, in kubectl nac and under OADP's nonadmin words; only kubectl nac's
// bsl has the admin's request subgroup.
func (s *KindsSuite) TestTenantGroups(c *C) {
	o := NewOptions(genericiooptions.IOStreams{In: bytes.NewReader(nil), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})
	var want []string
	for _, k := range v1alpha1.Kinds() {
		if k.Command == "" {
			c.Check(groupBuilders[k.Kind], IsNil, Commentf("%s has no Command but a builder", k.Kind))
			continue
		}
		want = append(want, k.Command)
		c.Check(groupBuilders[k.Kind], NotNil, Commentf("no builder for %s", k.Kind))
	}
	c.Check(groupBuilders, HasLen, len(want))
	c.Check(want, DeepEquals, []string{"backup", "bsl", "restore", "schedule"})
	root := NewRootCommand(o)
	for _, admin := range []bool{true, false} {
		var names []string
		for _, g := range tenantGroups(o, admin) {
			names = append(names, g.Name())
			k, ok := v1alpha1.LookupKind(g.Aliases[len(g.Aliases)-1])
			c.Check(ok && k.Command == g.Name(), Equals, true, Commentf("group %s aliases %v", g.Name(), g.Aliases))
			_, _, err := g.Find([]string{"request"})
			c.Check(err == nil, Equals, admin && g.Name() == "bsl", Commentf("%s request, admin %v", g.Name(), admin))
			if g.RunE != nil {
				c.Errorf("group %s is a build defect: %v", g.Name(), g.RunE(g, nil))
			}
		}
		c.Check(names, DeepEquals, want)
	}
	for _, name := range want {
		cmd, _, err := root.Find([]string{name})
		c.Check(err == nil && cmd.Name() == name, Equals, true, Commentf("kubectl nac %s", name))
		cmd, _, err = root.Find([]string{"nonadmin", name})
		c.Check(err == nil && cmd.Name() == name, Equals, true, Commentf("kubectl nac nonadmin %s", name))
	}
	req, _, err := root.Find([]string{"bsl", "request", "approve"})
	c.Check(err == nil && req.Name() == "approve", Equals, true)
}
