package app

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"

	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/mail"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/seal"
)

// OutboxDir is the outbox folder inside the data folder (docs/api.md §10.4: <data>/outbox).
const OutboxDir = "outbox"

// OpenMailer builds the mailer the configuration names: the outbox in <data>/outbox (docs/api.md
// §10.4) or Amazon SES through the standard AWS configuration chain.
func OpenMailer(ctx context.Context, cfg config.Config, clk clock.Clock, logger *slog.Logger) (mail.Mailer, error) {
	switch cfg.Mail.Adapter {
	case config.MailOutbox, "":
		return mail.NewOutbox(filepath.Join(cfg.DataDir, OutboxDir), mail.OutboxOptions{From: cfg.Mail.From, Clock: clk, Logger: logger})
	case config.MailSES:
		awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, fmt.Errorf("load AWS configuration: %w", err)
		}
		m := mail.NewSES(sesv2.NewFromConfig(awsCfg), cfg.Mail.From)
		m.ConfigurationSet = cfg.Mail.SESConfigurationSet
		return m, nil
	}
	return nil, fmt.Errorf("app: unknown mailer %q", cfg.Mail.Adapter)
}

// OpenSealer builds the sealer of TOTP secrets the configuration names: KMS when a key id is
// set (on AWS), otherwise AES-GCM under the configured key (config.EnsureConsoleKeys makes
// one in the data folder for `go run .`).
func OpenSealer(ctx context.Context, cfg config.Config) (seal.Sealer, error) {
	if cfg.Console.KMSKeyID != "" {
		awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, fmt.Errorf("load AWS configuration: %w", err)
		}
		return seal.NewKMS(kms.NewFromConfig(awsCfg), cfg.Console.KMSKeyID), nil
	}
	if len(cfg.Console.SealKey) == 0 {
		return nil, errors.New("app: no sealing key: set ROADEVENTS_SEAL_KEY or ROADEVENTS_KMS_KEY_ID, or call config.EnsureConsoleKeys")
	}
	return seal.NewAESGCM(cfg.Console.SealKey)
}

// errNoMailer is what the placeholder mailer answers: the process was built without one.
var errNoMailer = errors.New("app: no mailer configured (Deps.Mailer)")

type noMailer struct{}

// Send refuses every message.
func (noMailer) Send(context.Context, mail.Message) error { return errNoMailer }

// newConsoleAuth builds the console identity from d. Missing adapters are replaced so that
// the document can always be built; when the group is served, each replacement is logged,
// because it changes behaviour: without a mailer no code can be sent, and with a random key
// TOTP secrets and pending codes do not survive a restart.
func newConsoleAuth(d Deps, serving bool, onTOTPChange func(context.Context, consoleauth.User, string)) (*consoleauth.Service, error) {
	warn := func(msg string) {
		if serving {
			d.Logger.Warn(msg)
		}
	}
	mailer := d.Mailer
	if mailer == nil {
		mailer = noMailer{}
		warn("no mailer configured: console sign-in codes cannot be sent")
	}
	sealer := d.Sealer
	if sealer == nil && len(d.Config.Console.SealKey) == seal.KeySize {
		sealer, _ = seal.NewAESGCM(d.Config.Console.SealKey)
	}
	if sealer == nil {
		key := make([]byte, seal.KeySize)
		rand.Read(key)
		sealer, _ = seal.NewAESGCM(key)
		warn("no sealing key configured (ROADEVENTS_SEAL_KEY or ROADEVENTS_KMS_KEY_ID): using a random one, " +
			"so TOTP secrets cannot be read after this process restarts")
	}
	hashKey := d.Config.Console.HashKey
	if len(hashKey) < consoleauth.MinHashKeyBytes {
		hashKey = make([]byte, consoleauth.MinHashKeyBytes)
		rand.Read(hashKey)
		warn("no console hash key configured (ROADEVENTS_AUTH_HASH_KEY): using a random one, " +
			"so codes and recovery codes stop working when this process restarts")
	}
	s, err := consoleauth.New(d.Table, consoleauth.Options{
		Clock: d.Clock, Logger: d.Logger, Mailer: mailer, Sealer: sealer, HashKey: hashKey,
		ConsoleURL: d.Config.ConsoleURL, OnTOTPChange: onTOTPChange,
	})
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	return s, nil
}

// newOrgs builds the console's organisations (group console-orgs) on the identity auth. The
// mailer is replaced as newConsoleAuth does; without one, invitations are stored but their
// e-mails fail (logged).
func newOrgs(d Deps, auth *consoleauth.Service, serving bool) (*orgs.Service, error) {
	mailer := d.Mailer
	if mailer == nil {
		mailer = noMailer{}
		if serving {
			d.Logger.Warn("no mailer configured: invitations and key notices cannot be sent")
		}
	}
	s, err := orgs.New(d.Table, orgs.Options{
		Clock: d.Clock, Logger: d.Logger, Mailer: mailer, Keys: d.Keys, Users: auth, TOTP: auth,
		ConsoleURL: consoleAppURL(d.Config.ConsoleURL),
		Caps:       d.PlanCaps,
	})
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	return s, nil
}

// consoleAppURL is where the console's pages are, ending in "/": ConsoleURL when set (the
// console lives under /app/ because GET / is the API's JSON), "/app/" on the serving origin
// otherwise, so that an invitation link is at least a path of the same service.
func consoleAppURL(u string) string {
	if u == "" {
		return "/app/"
	}
	if u[len(u)-1] != '/' {
		u += "/"
	}
	return u
}
