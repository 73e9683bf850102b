// Package consoleauth is the console's identity (route group console-auth,
// docs/architecture.md §4): sign-up and sign-in by an e-mailed one-time code, sessions, TOTP with
// recovery codes, the profile, and the middleware that authenticates every /console route
// (docs/api.md §1, §2.9, §3, §4.2, §5 "Console authentication", §7 and §10.3).
//
// # Sign-in (docs/api.md §3)
//
// request-code e-mails a 6-digit code to any address, known or not, and answers the same for both.
// verify-code consumes the code; an unknown address gets its account there. A user with TOTP gets
// an AuthChallenge holding a temp_token instead of a session; verify-totp or verify-recovery with
// that token (the user is taken from it, never from the body) returns the session. Every failure of
// verify-code is the same 400 (docs/api.md §4.2), so it tells nobody whether an address has an account.
//
// # Credentials at rest (docs/api.md §10.3)
//
// Nothing that opens an account is stored in clear:
//
//   - session and temp tokens (ses_/tmp_ + 43 base62, about 256 bits) as SHA-256: a token
//     that random cannot be found from its hash, so no key is needed;
//   - e-mail codes and recovery codes as HMAC-SHA-256 under a server key (Options.HashKey)
//     held outside the table: a 6-digit code has only 10^6 values, so a bare SHA-256 of it is
//     reversed by hashing all of them in well under a second; with the key, a copy of the
//     table alone reveals nothing;
//   - TOTP secrets, which must be read back to check a code, sealed (package seal: AES-GCM
//     keyed from configuration, or KMS), bound to their user.
//
// Hashes are compared by looking them up as keys or in constant time.
//
// # Storage layout
//
//	pk "user#<user_id>"         sk "user"              the account (MePublic fields, TOTP state, session epoch)
//	pk "user#<user_id>"         sk "recovery#<hmac>"   one unused recovery code
//	pk "useremail#<address>"    sk "user"              address -> user_id (unique, created with the account)
//	pk "authcode#<address>"     sk "code"              the pending e-mail code: hmac, attempts; TTL 10 minutes
//	pk "session#<sha256>"       sk "session"           user_id, epoch, expiry; TTL 30 days
//	pk "temptoken#<sha256>"     sk "temp"              user_id, epoch; TTL 5 minutes
//
// Logout ends every token of the user without a scan: the account holds a session epoch,
// every session and temp token records the epoch it was minted in, and authentication (one
// Get of the session, one Get of the account) refuses a token of an older epoch. Logout and
// totp/disable add one to the epoch.
//
// # Caps (docs/api.md §10.3)
//
// Code requests: 5 per address per 15 minutes, for every address, existing or not. TOTP and
// recovery attempts: 5 per account per 15 minutes in one bucket shared by verify-totp,
// verify-recovery, totp/disable, recovery-codes/regenerate and VerifyTOTP (key issuance),
// because each of them is a guess at the same second factor. Both are fixed windows on the
// table (package ratelimit); a capped request is 429 with Retry-After.
package consoleauth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/mail"
	"github.com/roadevents/roadevents/shared/ratelimit"
	"github.com/roadevents/roadevents/shared/seal"
	"github.com/roadevents/roadevents/shared/store"
)

// Lifetimes and counts of sign-in (the session and temp_token ones: docs/api.md §10.3).
const (
	// CodeTTL is how long an e-mailed code is valid.
	CodeTTL = 10 * time.Minute
	// MaxCodeAttempts is how many tries one code allows, right or wrong; the code is dead after.
	MaxCodeAttempts = 5
	// SessionTTL is the lifetime of a session token (docs/api.md §10.3: 30 days).
	SessionTTL = 30 * 24 * time.Hour
	// TempTokenTTL is the lifetime of a temp_token (docs/api.md §10.3: 5 minutes).
	TempTokenTTL = 5 * time.Minute
	// RecoveryCodeCount is how many recovery codes confirm and regenerate hand out.
	RecoveryCodeCount = 10
	// DefaultLocale is MePublic.locale until the user sets one (docs/api.md §2.9).
	DefaultLocale = "en"
	// DefaultIssuer names the service in authenticator apps.
	DefaultIssuer = "Road Events"
	// MinHashKeyBytes is the shortest HMAC key accepted for codes.
	MinHashKeyBytes = 32
)

// The caps of docs/api.md §10.3 (deployment values; docs/api.md §8 rule 5 leaves them open).
var (
	CodeRequestCap = ratelimit.Rule{Name: "console-code-requests", Limit: 5, Window: 15 * time.Minute}
	TOTPAttemptCap = ratelimit.Rule{Name: "console-totp-attempts", Limit: 5, Window: 15 * time.Minute}
)

// Errors of the package. Check them with errors.Is.
var (
	// ErrInvalidCode is every failure of VerifyCode: unknown address, wrong, expired, used or
	// dead code. They are one error on purpose (docs/api.md §4.2).
	ErrInvalidCode = errors.New("consoleauth: invalid or expired code")
	// ErrInvalidTOTP is a TOTP code that is wrong, or right but already used (a replay).
	ErrInvalidTOTP = errors.New("consoleauth: invalid TOTP code")
	// ErrInvalidRecoveryCode is a recovery code that is unknown or already used.
	ErrInvalidRecoveryCode = errors.New("consoleauth: invalid recovery code")
	// ErrTOTPEnabled is returned by SetupTOTP and ConfirmTOTP while TOTP is on (docs/api.md §10.3: 409).
	ErrTOTPEnabled = errors.New("consoleauth: TOTP is already enabled")
	// ErrTOTPNotEnabled is returned where a TOTP code is needed but the account has none.
	ErrTOTPNotEnabled = errors.New("consoleauth: TOTP is not enabled")
	// ErrNoEnrolment is returned by ConfirmTOTP when no setup is pending.
	ErrNoEnrolment = errors.New("consoleauth: no TOTP enrolment pending")
	// ErrUnauthenticated is a session or temp token that is malformed, unknown, expired, of
	// the wrong kind, or ended by logout.
	ErrUnauthenticated = errors.New("consoleauth: invalid or expired token")
	// ErrLimited is a capped request: ratelimit's sentinel, so errors.As with
	// *ratelimit.LimitedError gives the rule and the Retry-After.
	ErrLimited = ratelimit.ErrLimited
	// ErrUserNotFound is returned for an account that does not exist.
	ErrUserNotFound = errors.New("consoleauth: user not found")
	// ErrOptions is returned by New for missing or unusable options.
	ErrOptions = errors.New("consoleauth: invalid options")
	// ErrConflict is returned when concurrent writes kept refusing an operation; retry.
	ErrConflict = errors.New("consoleauth: concurrent change, retry")
)

// User is an account as the console shows it (MePublic, docs/api.md §2.9).
type User struct {
	ID          string
	Email       string
	DisplayName *string // nil until set
	Locale      string
	TOTPEnabled bool
	CreatedAt   time.Time
	LastSeenAt  time.Time // zero: never signed in yet
}

// Session is a freshly minted session token; Token is never stored.
type Session struct {
	Token     string
	ExpiresAt time.Time
	User      User
}

// Options configure a Service.
type Options struct {
	// Clock decides expiry, TOTP time steps and cap windows; clock.System when nil. Give it
	// the table's clock so that TTL expiry and the service agree.
	Clock clock.Clock
	// Logger receives failures that are not answered to a client; slog.Default() when nil.
	Logger *slog.Logger
	// Mailer sends the codes. Required.
	Mailer mail.Mailer
	// Sealer encrypts TOTP secrets at rest. Required.
	Sealer seal.Sealer
	// HashKey keys the HMAC of e-mail and recovery codes; at least MinHashKeyBytes random
	// bytes, the same in every process of one table. Required.
	HashKey []byte
	// Issuer names the service in authenticator apps; DefaultIssuer when empty.
	Issuer string
	// ConsoleURL, when set, is linked from the e-mails.
	ConsoleURL string
	// OnTOTPChange, when set, is called after TOTP was turned on ("auth.totp_enabled") or off
	// ("auth.totp_disabled"), for the audit log of every organisation the user belongs to
	// (docs/api.md §10.3); its failure is the hook's to log.
	OnTOTPChange func(ctx context.Context, u User, action string)
}

// Service is the console identity on one table. It is safe for concurrent use.
type Service struct {
	table        store.Table
	clock        clock.Clock
	log          *slog.Logger
	mailer       mail.Mailer
	sealer       seal.Sealer
	hashKey      []byte
	issuer       string
	consoleURL   string
	onTOTPChange func(ctx context.Context, u User, action string)
	codeCap      *ratelimit.Limiter
	totpCap      *ratelimit.Limiter
}

// New returns the service on table.
func New(table store.Table, opts Options) (*Service, error) {
	switch {
	case table == nil:
		return nil, fmt.Errorf("%w: no table", ErrOptions)
	case opts.Mailer == nil:
		return nil, fmt.Errorf("%w: no mailer", ErrOptions)
	case opts.Sealer == nil:
		return nil, fmt.Errorf("%w: no sealer", ErrOptions)
	case len(opts.HashKey) < MinHashKeyBytes:
		return nil, fmt.Errorf("%w: hash key of %d bytes, want at least %d", ErrOptions, len(opts.HashKey), MinHashKeyBytes)
	}
	if opts.Clock == nil {
		opts.Clock = clock.System
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Issuer == "" {
		opts.Issuer = DefaultIssuer
	}
	codeCap, err := ratelimit.New(table, CodeRequestCap)
	if err != nil {
		return nil, err
	}
	totpCap, err := ratelimit.New(table, TOTPAttemptCap)
	if err != nil {
		return nil, err
	}
	return &Service{
		table:        table,
		clock:        opts.Clock,
		log:          opts.Logger,
		mailer:       opts.Mailer,
		sealer:       opts.Sealer,
		hashKey:      append([]byte(nil), opts.HashKey...),
		issuer:       opts.Issuer,
		consoleURL:   opts.ConsoleURL,
		onTOTPChange: opts.OnTOTPChange,
		codeCap:      codeCap,
		totpCap:      totpCap,
	}, nil
}
