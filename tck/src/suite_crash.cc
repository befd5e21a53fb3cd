// TckCrash — crash injection (SPEC §7.1, §7.5, §8, §12): a child process
// killed with SIGKILL at random points, then reopened and checked. The suites
// are added by the integrity/crash work; this file defines the anchor
// MQLITE_TCK_INSTANTIATE references.
#include "mqlite/tck.h"

namespace mqlite::tck {

int AnchorCrash() { return 0; }

// MQLITE_TCK_INSTANTIATE instantiates every suite; until this one has tests,
// tell gtest that an instantiation without tests is expected.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(TckCrash);

}  // namespace mqlite::tck
