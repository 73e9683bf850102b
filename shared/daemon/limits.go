package daemon

// Descriptors kept out of the connection budget: the store's files, the connections to
// DynamoDB, SES and Stripe, the listener, logs, and the refusals past the budget.
const (
	minReservedFiles = 256
	// fallbackBudget is the budget when the descriptor limit is unknown.
	fallbackBudget = 10000
)

// DefaultConnectionBudget is the connection budget of a process allowed nofile descriptors: all
// but a tenth of them, and at least minReservedFiles, kept for what else the process opens
// (docs/operations.md §3). nofile 0 means unknown.
func DefaultConnectionBudget(nofile uint64) int {
	if nofile == 0 {
		return fallbackBudget
	}
	reserve := max(nofile/10, minReservedFiles)
	if nofile <= reserve+64 {
		return 64
	}
	return int(nofile - reserve)
}
