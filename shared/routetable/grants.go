package routetable

import "slices"

// ItemAction is a DynamoDB item action, as IAM names it. The store's operations map onto them
// one to one (Get → GetItem, BatchGet → BatchGetItem, Query → Query, Put → PutItem, Update →
// UpdateItem, Delete → DeleteItem); a transaction needs the action of each operation it holds,
// ConditionCheckItem for a check.
type ItemAction string

// The item actions of the table.
const (
	GetItem            ItemAction = "dynamodb:GetItem"
	BatchGetItem       ItemAction = "dynamodb:BatchGetItem"
	Query              ItemAction = "dynamodb:Query"
	PutItem            ItemAction = "dynamodb:PutItem"
	UpdateItem         ItemAction = "dynamodb:UpdateItem"
	DeleteItem         ItemAction = "dynamodb:DeleteItem"
	ConditionCheckItem ItemAction = "dynamodb:ConditionCheckItem"
)

// Reads reports whether a only reads items.
func (a ItemAction) Reads() bool { return a == GetItem || a == BatchGetItem || a == Query }

// KMSAction is an action on the KMS key that seals TOTP secrets.
type KMSAction string

// The KMS actions the sealer calls (shared/seal).
const (
	KMSEncrypt KMSAction = "kms:Encrypt"
	KMSDecrypt KMSAction = "kms:Decrypt"
)

// The secret variables a process may be given (docs/security.md §1).
const (
	SecretEventIDKey  = "ROADEVENTS_EVENT_ID_KEY"
	SecretAuthHashKey = "ROADEVENTS_AUTH_HASH_KEY"
	SecretStripeKey   = "STRIPE_SECRET_KEY"
	SecretStripeHook  = "STRIPE_WEBHOOK_SECRET"
)

// ItemGrant is the right to call Actions on the items whose partition key starts with Prefix
// (the item layout of docs/architecture.md §2).
type ItemGrant struct {
	Prefix  string
	Actions []ItemAction
}

// Grants is what one group's process may do on AWS besides answering its routes
// (docs/security.md §6): the CDK stack grants exactly this to the group's function (the
// stream's: to the streamer's task), and shared/app's tests hold it to what the group's routes
// do, so a grant nobody uses or a call nobody granted fails a test, not a deployment.
type Grants struct {
	// Items are the table's items the group reads and writes, by partition-key prefix.
	Items []ItemGrant
	// Secrets are the secret variables the group's process is given.
	Secrets []string
	// KMS are the actions the group calls on the TOTP sealing key.
	KMS []KMSAction
	// SendsMail tells whether the group sends e-mail (SES).
	SendsMail bool
	// SendsTurns tells whether the group sends webhook deliveries' turns to their queue (SQS,
	// docs/webhooks.md §3): the producer of deliveries, the dispatcher, a redelivery.
	SendsTurns bool
}

// Allows reports whether g grants action on the item with partition key pk.
func (g Grants) Allows(action ItemAction, pk string) bool {
	for _, ig := range g.Items {
		if len(pk) >= len(ig.Prefix) && pk[:len(ig.Prefix)] == ig.Prefix && slices.Contains(ig.Actions, action) {
			return true
		}
	}
	return false
}

// Grants returns what group g may do; nothing for an unknown group.
func (g Group) Grants() Grants {
	gr := grants[g]
	gr.Items = slices.Clone(gr.Items)
	gr.Secrets = slices.Clone(gr.Secrets)
	gr.KMS = slices.Clone(gr.KMS)
	return gr
}

// Shorthands for the grants below.
var (
	read  = []ItemAction{GetItem}
	query = []ItemAction{Query}
)

// grants is the table of docs/security.md §6. Prefixes end at a "#", so that "org#" is not
// "orgevents#"; a rate-limit window's prefix names its rule.
var grants = map[Group]Grants{
	// meta answers from the code alone: no item, no secret.
	GroupMeta: {},
	GroupEvents: {
		Items: []ItemGrant{
			{"apikey#", read}, // authentication
			{"event#", []ItemAction{GetItem, BatchGetItem, Query, PutItem, ConditionCheckItem}},
			{"area#", []ItemAction{Query, PutItem, DeleteItem}},
			{"merge#", []ItemAction{BatchGetItem, PutItem, ConditionCheckItem}},
			{"orgevents#", []ItemAction{Query, PutItem}},
			{"reputation#", []ItemAction{Query, PutItem, UpdateItem, DeleteItem}},
			{"ratelimit#signals#", []ItemAction{UpdateItem}}, // the signal ceiling
			{"ticket#", []ItemAction{PutItem}},
			// usage and last_used_at; a verdict reads the organisation and its owners and
			// writes its audit entry (docs/network.md §2); the console's Road routes read the
			// caller's membership
			{"org#", []ItemAction{GetItem, BatchGetItem, Query, PutItem, UpdateItem}},
			// the console's Road routes (docs/console.md §5): the caller's session and account
			{"session#", read},
			{"user#", read},
			// the feed poller, the group's scheduled job (docs/interop.md §13)
			{"feed#", []ItemAction{GetItem, Query, PutItem, UpdateItem, DeleteItem}},
			// the webhook producer on the table's stream reads the alert rules
			// (docs/webhooks.md §5) and writes deliveries under org#
			{"alertrule#", query},
		},
		Secrets:    []string{SecretEventIDKey},
		SendsMail:  true, // a verdict's e-mail to the publisher's owners
		SendsTurns: true, // the deliveries the producer makes
	},
	GroupConsoleAuth: {
		Items: []ItemGrant{
			{"authcode#", []ItemAction{PutItem, UpdateItem, DeleteItem}},
			{"useremail#", []ItemAction{GetItem, Query, PutItem, DeleteItem}}, // Query: the organisations an erased address is filed under
			{"user#", []ItemAction{GetItem, Query, PutItem, UpdateItem, DeleteItem}},
			{"session#", []ItemAction{GetItem, PutItem}},
			{"temptoken#", []ItemAction{GetItem, PutItem, DeleteItem}},
			{"ratelimit#console-code-requests#", []ItemAction{UpdateItem, DeleteItem}},
			{"ratelimit#console-totp-attempts#", []ItemAction{UpdateItem, DeleteItem}},
			// turning TOTP on or off is written in the audit log of each of the user's
			// organisations; the export of a person's data reads their organisations and
			// audit entries
			{"userorg#", []ItemAction{Query, DeleteItem}},
			{"org#", []ItemAction{GetItem, BatchGetItem, Query, PutItem, UpdateItem, DeleteItem}},
			// erasing an account (docs/privacy.md §6): it leaves its organisations, which forget
			// its address in their records, and deletes those it alone is in, with their keys,
			// feeds, alert rules, invitations and Stripe customer
			{"invitetoken#", []ItemAction{DeleteItem}},
			{"apikey#", []ItemAction{UpdateItem}},
			{"feed#", []ItemAction{Query, UpdateItem, DeleteItem}},
			{"alertrule#", []ItemAction{Query, UpdateItem, DeleteItem}},
			{"ratelimit#console-invites-recipient#", []ItemAction{DeleteItem}},
			{"billing#", []ItemAction{DeleteItem}},
			{"stripecustomer#", []ItemAction{DeleteItem}},
		},
		Secrets:   []string{SecretAuthHashKey, SecretStripeKey},
		KMS:       []KMSAction{KMSEncrypt, KMSDecrypt},
		SendsMail: true, // sign-in codes
	},
	GroupConsoleOrgs: {
		Items: []ItemGrant{
			{"session#", read}, // the caller's session and account
			{"user#", []ItemAction{GetItem, BatchGetItem, UpdateItem}},
			// filing an organisation under the addresses it names, and unfiling a deleted
			// one (docs/privacy.md §6)
			{"useremail#", []ItemAction{PutItem, DeleteItem}},
			{"org#", []ItemAction{GetItem, BatchGetItem, Query, PutItem, UpdateItem, DeleteItem}},
			{"userorg#", []ItemAction{Query, PutItem, DeleteItem}},
			{"invitetoken#", []ItemAction{GetItem, PutItem, DeleteItem}},
			{"apikey#", []ItemAction{PutItem, UpdateItem}}, // issuing and revoking keys
			{"reputation#", query}, // the quality panel
			{"ratelimit#console-org-creation#", []ItemAction{UpdateItem}},
			{"ratelimit#console-invites-actor#", []ItemAction{UpdateItem}},
			{"ratelimit#console-invites-recipient#", []ItemAction{UpdateItem}},
			{"ratelimit#console-key-issuance#", []ItemAction{UpdateItem}},
			{"ratelimit#console-totp-attempts#", []ItemAction{UpdateItem}},
			{"feed#", []ItemAction{GetItem, Query, PutItem, UpdateItem, DeleteItem}},      // the feed registry
			{"alertrule#", []ItemAction{GetItem, Query, PutItem, UpdateItem, DeleteItem}}, // the alert rules
			// closing the billing of a deleted organisation (docs/privacy.md §6)
			{"billing#", []ItemAction{DeleteItem}},
			{"stripecustomer#", []ItemAction{DeleteItem}},
		},
		Secrets: []string{SecretStripeKey}, // deleting a deleted organisation's Stripe customer
		// Decrypt: the TOTP step-up of key issuance and signing deliveries; Encrypt: sealing
		// webhook signing secrets.
		KMS:        []KMSAction{KMSEncrypt, KMSDecrypt},
		SendsMail:  true, // invitations, notices of issued keys
		SendsTurns: true, // the dispatcher's next turns, redeliveries
	},
	GroupBilling: {
		Items: []ItemGrant{
			{"session#", read},
			{"user#", read},
			{"org#", []ItemAction{GetItem, BatchGetItem, Query, PutItem, UpdateItem}},
			{"stripecustomer#", []ItemAction{GetItem, PutItem}},
			{"billing#", []ItemAction{Query, PutItem, DeleteItem}},
		},
		Secrets: []string{SecretStripeKey, SecretStripeHook},
	},
	// The streamer: keys, tickets, the area index for snapshots, usage and last_used_at. It
	// also reads the table's stream, which is no item.
	GroupStream: {
		Items: []ItemGrant{
			{"apikey#", read},
			{"ticket#", read},
			{"area#", query},
			{"org#", []ItemAction{GetItem, UpdateItem}},
		},
	},
}
