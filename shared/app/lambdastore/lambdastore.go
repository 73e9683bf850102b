// Package lambdastore opens, for the Lambda function of a route group on the table
// (docs/architecture.md §4), what the group is built from: the table, the API keys and the
// meter on it, the mailer and the sealer the configuration names. It hands the function the
// writes the instance must not hold (see shared/app/lambdaapp): the keys' last_used_at after
// each invocation, and the meter's counts in batches and at shutdown.
package lambdastore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/app/groupapi"
	"github.com/roadevents/roadevents/shared/app/tenants"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/dynamodb"
	"github.com/roadevents/roadevents/shared/store/embedded"
)

// ErrKeys is returned on DynamoDB when a shared secret key the group is granted is missing:
// every instance would make up its own random key, and ids, codes and sessions made by one
// instance would not be recognised by the next (config.Config.EventIDKey).
var ErrKeys = errors.New("lambdastore: a Lambda on DynamoDB needs the keys its group is granted " +
	"(routetable.Group.Grants: ROADEVENTS_EVENT_ID_KEY, ROADEVENTS_AUTH_HASH_KEY, ROADEVENTS_KMS_KEY_ID or ROADEVENTS_SEAL_KEY), " +
	"from the environment or " + config.SecretsEnv)

// Opener returns the constructor of the function of the group newGroup builds. On DynamoDB it
// opens the table without describing or creating it (the stack owns it, and the function has
// no right to) and without its stream (only streamer/ reads it). The embedded store
// (ROADEVENTS_STORE=embedded with ROADEVENTS_DATA) is for running a function on one machine,
// as the packaging test does; its keys come from the data folder as for `go run .`.
func Opener(group routetable.Group, newGroup func(tenants.Deps) (*groupapi.Group, error)) groupapi.Constructor {
	return func(ctx context.Context, b groupapi.Base) (*groupapi.Group, error) {
		table, err := openTable(ctx, group.Grants(), &b.Config, b.Clock, b.Logger)
		if err != nil {
			return nil, err
		}
		g, err := build(ctx, b, table, newGroup)
		if err != nil {
			table.Close()
			return nil, err
		}
		return g, nil
	}
}

func build(ctx context.Context, b groupapi.Base, table store.Table, newGroup func(tenants.Deps) (*groupapi.Group, error)) (*groupapi.Group, error) {
	mailer, err := tenants.OpenMailer(ctx, b.Config, b.Clock, b.Logger)
	if err != nil {
		return nil, err
	}
	sealer, err := tenants.OpenSealer(ctx, b.Config)
	if err != nil {
		return nil, err
	}
	turns, err := tenants.OpenTurns(ctx, b.Config, b.Clock)
	if err != nil {
		return nil, err
	}
	keys := apikey.New(table, apikey.Options{Clock: b.Clock, Logger: b.Logger})
	// No background flush: a frozen instance's timer would not fire. The function flushes.
	meter := metering.New(table, metering.Options{Clock: b.Clock, Logger: b.Logger, FlushInterval: -1})
	g, err := newGroup(tenants.Deps{Base: b, Table: table, Keys: keys, Meter: meter, Mailer: mailer, Sealer: sealer, Turns: turns})
	if err != nil {
		return nil, err
	}
	g.Settle = keys.Wait
	g.Flush = meter.Flush
	g.Close = func(ctx context.Context) error {
		if err := meter.Close(ctx); err != nil {
			table.Close()
			return fmt.Errorf("close meter: %w", err)
		}
		return table.Close()
	}
	return g, nil
}

// openTable opens the configured table and makes sure cfg holds the shared keys the group is
// granted. On DynamoDB a key the group is not granted (docs/security.md §6) is a random one of
// this instance: the group's code never uses it, and its constructors need every key set.
func openTable(ctx context.Context, grants routetable.Grants, cfg *config.Config, clk clock.Clock, logger *slog.Logger) (store.Table, error) {
	if cfg.Store == config.StoreEmbedded {
		if err := cfg.EnsureEventIDKey(); err != nil {
			return nil, err
		}
		if err := cfg.EnsureConsoleKeys(); err != nil {
			return nil, err
		}
		s, err := embedded.Open(filepath.Join(cfg.DataDir, config.EmbeddedStoreFile), embedded.Options{Clock: clk, Logger: logger})
		if err != nil {
			return nil, fmt.Errorf("open embedded store in %s: %w", cfg.DataDir, err)
		}
		return s, nil
	}
	for _, k := range []struct {
		granted bool
		key     *[]byte
		set     bool
	}{
		{slices.Contains(grants.Secrets, routetable.SecretEventIDKey), &cfg.EventIDKey, len(cfg.EventIDKey) > 0},
		{slices.Contains(grants.Secrets, routetable.SecretAuthHashKey), &cfg.Console.HashKey, len(cfg.Console.HashKey) > 0},
		{len(grants.KMS) > 0, &cfg.Console.SealKey, len(cfg.Console.SealKey) > 0 || cfg.Console.KMSKeyID != ""},
	} {
		switch {
		case k.granted && !k.set:
			return nil, ErrKeys
		case !k.granted && !k.set:
			*k.key = make([]byte, 32)
			rand.Read(*k.key)
		}
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	return dynamodb.New(ddb.NewFromConfig(awsCfg), cfg.Table, dynamodb.Options{Clock: clk}), nil
}
