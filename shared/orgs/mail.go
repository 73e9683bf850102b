package orgs

import (
	"context"
	"fmt"
	"html"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/mail"
)

// InviteLink is the link of an invitation e-mail: the console's accept page with the token in
// the fragment, so that it never reaches a server's log (ConsoleURL ends in "/").
func InviteLink(consoleURL, token string) string {
	return consoleURL + "accept-invite#token=" + token
}

// sendInvitation e-mails the invitation's link. The invitation exists whether or not the
// e-mail goes out: a failure is logged, and the owner can resend it.
func (s *Service) sendInvitation(ctx context.Context, org Organisation, actor Actor, inv invitation, token string) {
	link := InviteLink(s.consoleURL, token)
	days := int(InvitationTTL.Hours() / 24)
	text := fmt.Sprintf("%s invited you to join the organisation %q on %s as %s.\n\n"+
		"Open this link to accept, signed in with this address (%s):\n\n    %s\n\n"+
		"The invitation expires in %d days and works once. If you did not expect it, ignore this message.\n",
		actor.Email, org.Name, s.issuer, inv.Role, inv.Email, link, days)
	body := fmt.Sprintf(`<!DOCTYPE html><html><body>`+
		`<p>%s invited you to join the organisation <b>%s</b> on %s as %s.</p>`+
		`<p><a href="%s">Accept the invitation</a>, signed in with this address (%s).</p>`+
		`<p>The invitation expires in %d days and works once. If you did not expect it, ignore this message.</p>`+
		`</body></html>`,
		html.EscapeString(actor.Email), html.EscapeString(org.Name), html.EscapeString(s.issuer), inv.Role,
		html.EscapeString(link), html.EscapeString(inv.Email), days)
	// The subject never holds the organisation's name (free text, and subjects are logged) nor
	// the token.
	msg := mail.Message{To: inv.Email, Subject: fmt.Sprintf("You are invited to an organisation on %s", s.issuer), Text: text, HTML: body}
	if err := s.mailer.Send(ctx, msg); err != nil {
		s.log.Error("orgs: send invitation", "org_id", org.OrgID, "invite_id", inv.InviteID, "error", err.Error())
	}
}

// notifyOwners e-mails every owner but the issuer about a new key (docs/api.md §5 API key rule 4),
// naming its label, environment, prefix and issuer, never its secret. Failures are logged.
func (s *Service) notifyOwners(ctx context.Context, org Organisation, actor Actor, key apikey.Key) {
	members, _, err := s.seats(ctx, org.OrgID)
	if err != nil {
		s.log.Error("orgs: list owners to notify of a key", "org_id", org.OrgID, "error", err.Error())
		return
	}
	text := fmt.Sprintf("%s issued a new %s API key in the organisation %q on %s.\n\n"+
		"    label:       %s\n    environment: %s\n    prefix:      %s\n    key id:      %s\n\n"+
		"If this was not expected, revoke the key in the console.\n",
		actor.Email, key.Environment, org.Name, s.issuer, key.Label, key.Environment, key.Prefix, key.KeyID)
	for _, m := range members {
		if m.Role != RoleOwner || m.UserID == actor.UserID {
			continue
		}
		msg := mail.Message{To: m.Email, Subject: fmt.Sprintf("A new %s API key was issued on %s", key.Environment, s.issuer), Text: text}
		if err := s.mailer.Send(ctx, msg); err != nil {
			s.log.Error("orgs: notify an owner of a key", "org_id", org.OrgID, "key_id", key.KeyID, "error", err.Error())
		}
	}
}
