package bench

import "github.com/gale-stream/gale/internal/procstat"

// currentRSS returns the resident set size of this process (Linux only;
// elsewhere it returns an error and RSS is not sampled).
func currentRSS() (int64, error) { return procstat.RSS() }
