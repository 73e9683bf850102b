package stack

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/roadevents/roadevents/shared/routetable"
)

// The context keys infra/main.go reads besides the props' (docs/operations.md §5).
const (
	ContextStage      = "stage"
	ContextMailDomain = "mailDomain"
	ContextConsoleURL = "consoleUrl"
	ContextAlarmEmail = "alarmEmail"
	ContextTarget     = "target"
)

// TargetLocalStack is the value of -c target= that synthesizes the LocalStack stack instead
// (NewLocalStack).
const TargetLocalStack = "localstack"

// FromContext reads the deployment values of the main and edge stacks from the context (get
// returns "" for an absent key): everything but the code and the files, which infra/main.go
// finds, and the environments. It refuses a number that is none; Props.Check and NewEdge
// refuse the rest.
func FromContext(get func(key string) string) (Props, EdgeProps, error) {
	or := func(key, def string) string {
		if v := get(key); v != "" {
			return v
		}
		return def
	}
	p := Props{
		Stage:                or(ContextStage, StageDev),
		MailDomain:           or(ContextMailDomain, "roadevents.example"),
		ConsoleURL:           get(ContextConsoleURL),
		AlarmEmail:           get(ContextAlarmEmail),
		OriginDomain:         get(ContextOriginDomain),
		OriginCertificateARN: get(ContextOriginCertificateARN),
		DomainName:           get(ContextDomainName),
		CertificateARN:       get(ContextCertificateARN),
		WebACLARN:            get(ContextWebACLARN),
	}
	e := EdgeProps{Stage: p.Stage}
	var err error
	if v := get(ContextLogRetentionDays); v != "" {
		if p.LogRetentionDays, err = strconv.ParseFloat(v, 64); err != nil {
			return p, e, fmt.Errorf("%w: -c %s=%q: want a number of days", ErrProps, ContextLogRetentionDays, v)
		}
	}
	if v := get(ContextRateLimit); v != "" {
		if e.RateLimit, err = strconv.ParseFloat(v, 64); err != nil {
			return p, e, fmt.Errorf("%w: -c %s=%q: want requests per 5 minutes", ErrProps, ContextRateLimit, v)
		}
	}
	switch mode := get(ContextRateLimitMode); mode {
	case "", "block":
	case "count":
		e.RateLimitCountOnly = true
	default:
		return p, e, fmt.Errorf("%w: -c %s=%q: want block or count", ErrProps, ContextRateLimitMode, mode)
	}
	if v := get(ContextReservedConcurrency); v != "" {
		p.ReservedConcurrency = map[routetable.Group]float64{}
		for _, pair := range strings.Split(v, ",") {
			g, n, ok := strings.Cut(strings.TrimSpace(pair), "=")
			count, err := strconv.ParseFloat(n, 64)
			if !ok || err != nil {
				return p, e, fmt.Errorf("%w: -c %s=%q: want group=count,... (events=200,meta=10)", ErrProps, ContextReservedConcurrency, v)
			}
			p.ReservedConcurrency[routetable.Group(g)] = count
		}
	}
	return p, e, nil
}
