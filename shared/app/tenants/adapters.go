package tenants

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/mail"
	"github.com/roadevents/roadevents/shared/seal"
	"github.com/roadevents/roadevents/shared/webhooks"
	"github.com/roadevents/roadevents/shared/webhooks/sqsturns"
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
	return nil, fmt.Errorf("tenants: unknown mailer %q", cfg.Mail.Adapter)
}

// OpenTurns builds the carrier of webhook deliveries' turns the configuration names: SQS when
// a queue is set (on AWS), none (the table keeps them) otherwise.
func OpenTurns(ctx context.Context, cfg config.Config, clk clock.Clock) (webhooks.Sender, error) {
	if cfg.Webhooks.QueueURL == "" {
		return nil, nil
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	return &sqsturns.Sender{API: sqs.NewFromConfig(awsCfg), QueueURL: cfg.Webhooks.QueueURL, Clock: clk}, nil
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
		return nil, errors.New("tenants: no sealing key: set ROADEVENTS_SEAL_KEY or ROADEVENTS_KMS_KEY_ID, or call config.EnsureConsoleKeys")
	}
	return seal.NewAESGCM(cfg.Console.SealKey)
}
