package cli

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/roadevents/roadevents/shared/sdk"
)

// login signs in with the console's code flow (docs/api.md §4.2): the e-mailed code, and the
// authenticator's code when the account has TOTP, read from the terminal.
func login(ctx context.Context, e *Env, args []string) int {
	fs := e.flags("login", "[-email ADDRESS] [-url URL]")
	email := fs.String("email", "", "your e-mail address (asked when not given)")
	base := fs.String("url", "", "the service (default: ROADEVENTS_URL, the config file's, or http://127.0.0.1:8080)")
	if fs.Parse(args) != nil {
		return ExitUsage
	}
	cfg, _, err := e.loadConfig()
	if err != nil {
		return e.fail(err)
	}
	if *base != "" {
		cfg.URL = *base
	}
	in := bufio.NewReader(e.Stdin)
	if *email == "" {
		if *email, err = e.prompt(in, "E-mail: "); err != nil {
			return e.fail(err)
		}
	}
	c := sdk.New(e.baseURL(cfg), "", e.Options...)
	if _, err := c.Call(ctx, http.MethodPost, "/console/auth/request-code", nil, map[string]string{"email": *email}, nil); err != nil {
		return e.fail(err)
	}
	code, err := e.prompt(in, "Code sent to "+*email+": ")
	if err != nil {
		return e.fail(err)
	}
	var answer struct {
		Kind      string `json:"kind"`
		Token     string `json:"token"`
		TempToken string `json:"temp_token"`
	}
	if _, err := c.Call(ctx, http.MethodPost, "/console/auth/verify-code", nil, map[string]string{"email": *email, "code": code}, &answer); err != nil {
		return e.fail(err)
	}
	if answer.Kind != "session" {
		totp, err := e.prompt(in, "Authenticator code: ")
		if err != nil {
			return e.fail(err)
		}
		temp := sdk.New(e.baseURL(cfg), answer.TempToken, e.Options...)
		if _, err := temp.Call(ctx, http.MethodPost, "/console/auth/verify-totp", nil, map[string]string{"code": totp}, &answer); err != nil {
			return e.fail(err)
		}
	}
	cfg.Session, cfg.Email = answer.Token, *email
	path, err := e.saveConfig(cfg)
	if err != nil {
		return e.fail(err)
	}
	fmt.Fprintf(e.Stdout, "Signed in as %s (session kept in %s)\n", *email, path)
	return ExitOK
}

func logout(ctx context.Context, e *Env, args []string) int {
	if e.flags("logout", "").Parse(args) != nil {
		return ExitUsage
	}
	cfg, _, err := e.loadConfig()
	if err != nil {
		return e.fail(err)
	}
	if cfg.Session != "" {
		// Ending the session on the service too; a session already gone is no error here.
		sdk.New(e.baseURL(cfg), cfg.Session, append(e.Options, sdk.WithRetry(sdk.NoRetry))...).Call(ctx, http.MethodPost, "/console/auth/logout", nil, nil, nil)
	}
	cfg.Session, cfg.Email = "", ""
	if _, err := e.saveConfig(cfg); err != nil {
		return e.fail(err)
	}
	fmt.Fprintln(e.Stdout, "Signed out")
	return ExitOK
}

func orgsCmd(ctx context.Context, e *Env, args []string) int {
	if e.flags("orgs", "").Parse(args) != nil {
		return ExitUsage
	}
	c, err := e.consoleClient()
	if err != nil {
		return e.fail(err)
	}
	var list []struct {
		OrgID string `json:"org_id"`
		Name  string `json:"name"`
		Role  string `json:"role"`
		Plan  string `json:"plan"`
	}
	if _, err := c.Call(ctx, http.MethodGet, "/console/orgs", nil, nil, &list); err != nil {
		return e.fail(err)
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ORG_ID\tNAME\tROLE\tPLAN")
	for _, o := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", o.OrgID, o.Name, o.Role, o.Plan)
	}
	tw.Flush()
	return ExitOK
}

// keys lists, issues and revokes an organisation's API keys. An issued key is printed once;
// -save keeps it in the config file instead, where the event commands find it.
func keys(ctx context.Context, e *Env, args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(e.Stderr, "usage: roadevents keys list|issue|revoke -org ORG_ID ...")
		return ExitUsage
	}
	sub, args := args[0], args[1:]
	fs := e.flags("keys "+sub, "-org ORG_ID ...")
	org := fs.String("org", "", "the organisation (roadevents orgs lists them)")
	env := fs.String("env", "sandbox", "issue: live or sandbox")
	label := fs.String("label", "roadevents cli", "issue: what the key is for")
	save := fs.Bool("save", false, "issue: keep the key in the config file rather than print it")
	if fs.Parse(args) != nil || *org == "" {
		fs.Usage()
		return ExitUsage
	}
	c, err := e.consoleClient()
	if err != nil {
		return e.fail(err)
	}
	base := "/console/orgs/" + url.PathEscape(*org) + "/keys"
	switch sub {
	case "list":
		var list []struct {
			KeyID       string  `json:"key_id"`
			Label       string  `json:"label"`
			Environment string  `json:"environment"`
			Prefix      string  `json:"prefix"`
			RevokedAt   *string `json:"revoked_at"`
			LastUsedAt  *string `json:"last_used_at"`
		}
		if _, err := c.Call(ctx, http.MethodGet, base, nil, nil, &list); err != nil {
			return e.fail(err)
		}
		tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "KEY_ID\tENV\tLABEL\tPREFIX\tSTATE")
		for _, k := range list {
			state := "active"
			if k.RevokedAt != nil {
				state = "revoked"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", k.KeyID, k.Environment, k.Label, k.Prefix, state)
		}
		tw.Flush()
	case "issue":
		body := map[string]any{"label": *label, "environment": *env}
		var issued struct {
			Key    string `json:"key"`
			APIKey struct {
				KeyID string `json:"key_id"`
			} `json:"api_key"`
		}
		_, err := c.Call(ctx, http.MethodPost, base, nil, body, &issued)
		if sdk.StatusOf(err) == http.StatusForbidden && describeHas(err, "totp_code") {
			// An owner with TOTP confirms an issuance with the authenticator's code.
			code, perr := e.prompt(bufio.NewReader(e.Stdin), "Authenticator code: ")
			if perr != nil {
				return e.fail(err)
			}
			body["totp_code"] = code
			_, err = c.Call(ctx, http.MethodPost, base, nil, body, &issued)
		}
		if err != nil {
			return e.fail(err)
		}
		if *save {
			cfg, _, err := e.loadConfig()
			if err != nil {
				return e.fail(err)
			}
			cfg.APIKey = issued.Key
			path, err := e.saveConfig(cfg)
			if err != nil {
				return e.fail(err)
			}
			fmt.Fprintf(e.Stdout, "Issued %s (%s); the key is kept in %s\n", issued.APIKey.KeyID, *env, path)
			return ExitOK
		}
		fmt.Fprintf(e.Stdout, "Issued %s (%s). The key, shown this once:\n%s\n", issued.APIKey.KeyID, *env, issued.Key)
	case "revoke":
		if fs.NArg() != 1 {
			fmt.Fprintln(e.Stderr, "usage: roadevents keys revoke -org ORG_ID KEY_ID")
			return ExitUsage
		}
		if _, err := c.Call(ctx, http.MethodDelete, base+"/"+url.PathEscape(fs.Arg(0)), nil, nil, nil); err != nil {
			return e.fail(err)
		}
		fmt.Fprintf(e.Stdout, "Revoked %s\n", fs.Arg(0))
	default:
		fmt.Fprintf(e.Stderr, "roadevents keys: unknown action %q: want list, issue or revoke\n", sub)
		return ExitUsage
	}
	return ExitOK
}

func describeHas(err error, s string) bool { return err != nil && strings.Contains(describe(err), s) }
