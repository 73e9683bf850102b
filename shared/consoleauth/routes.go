package consoleauth

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/schema"
)

// Payload and record schemas, named as docs/api.md §10.3 names them. OkResponseSchema is shared
// with the console's other groups (one component, one name).
var (
	email = schema.Email().MaxLen(254).Describe("E-mail address; compared without regard to case.")

	RequestCodePayloadSchema = schema.Object(
		schema.Req("email", email),
	).Named("RequestCodePayload")
	VerifyCodePayloadSchema = schema.Object(
		schema.Req("email", email),
		schema.Req("code", schema.String().Match(`^[0-9]{6}$`).Describe("The 6 digits of the e-mailed code.")),
	).Named("VerifyCodePayload")
	TotpCodePayloadSchema = schema.Object(
		schema.Req("code", schema.String().Len(1, 16).Describe("The current code of the authenticator app.")),
	).Named("TotpCodePayload")
	RecoveryCodePayloadSchema = schema.Object(
		schema.Req("code", schema.String().Len(1, 64).Describe("One recovery code, with or without its dash, any case.")),
	).Named("RecoveryCodePayload")
	ProfileUpdateSchema = schema.Object(
		schema.Prop("display_name", schema.String().Len(1, 80).Printable().OrEmpty().OrNull().Describe(
			"null or an empty string clears the name (a generated client that leaves nulls out sends \"\").")),
		schema.Prop("locale", schema.String().Len(2, 35).Describe("A language tag such as en or fr-CA.")),
	).Named("ProfileUpdate").Describe("Only the fields sent are written.")

	MePublicSchema = schema.Object(
		schema.Req("user_id", schema.String()),
		schema.Req("email", schema.String()),
		schema.Prop("display_name", schema.String().OrNull()),
		schema.Prop("locale", schema.String().WithDefault(DefaultLocale)),
		schema.Prop("totp_enabled", schema.Boolean().WithDefault(false)),
		schema.Prop("created_at", schema.DateTime()),
		schema.Prop("last_seen_at", schema.DateTime().OrNull()),
	).Named("MePublic")
	SessionSchema = schema.Object(
		schema.Req("token", schema.String().Describe("A fresh session token, ses_ + 43 base62 characters: send it as Authorization: Bearer.")),
		schema.Req("expires_at", schema.DateTime()),
		schema.Req("user", MePublicSchema),
		schema.Req("kind", schema.Const(KindSession).Describe("Always session: tells a Session from an AuthChallenge (verify-code answers either).")),
	).Named("Session")
	AuthChallengeSchema = schema.Object(
		schema.Req("method", schema.Enum("email", "totp").Describe("email: a code was sent; totp: send a TOTP or recovery code with temp_token.")),
		schema.Prop("email", schema.String().OrNull().Describe("Where the code went (method email).")),
		schema.Prop("temp_token", schema.String().OrNull().Describe("tmp_ + 43 base62 characters, valid 5 minutes, for verify-totp and verify-recovery (method totp).")),
		schema.Req("kind", schema.Const(KindChallenge).Describe("Always challenge: tells an AuthChallenge from a Session (verify-code answers either).")),
	).Named("AuthChallenge")
	// SessionOrChallengeSchema is verify-code's answer, told apart by kind (docs/api.md §4.2).
	SessionOrChallengeSchema = schema.OneOf("kind", SessionSchema, AuthChallengeSchema)
	TotpEnrolmentSchema      = schema.Object(
		schema.Req("secret", schema.String().Describe("Base32 secret, for typing into an authenticator app.")),
		schema.Req("otpauth_url", schema.String().Describe("otpauth:// URL, for a QR code.")),
		schema.Req("issuer", schema.String()),
		schema.Req("account", schema.String()),
	).Named("TotpEnrolment")
	RecoveryCodesSchema = schema.Object(
		schema.Req("codes", schema.Array(schema.String()).Count(RecoveryCodeCount, RecoveryCodeCount).Describe("Shown once; each works once.")),
		schema.Req("generated_at", schema.DateTime()),
	).Named("RecoveryCodes")
	RecoveryCodesStatusSchema = schema.Object(
		schema.Req("remaining", schema.Integer()),
		schema.Req("total", schema.Integer()),
	).Named("RecoveryCodesStatus")
	OkResponseSchema = schema.Object(
		schema.Req("ok", schema.Const(true)),
	).Named("OkResponse")
)

// MePublic is the console's view of the signed-in user (docs/api.md §2.9).
type MePublic struct {
	UserID      string     `json:"user_id"`
	Email       string     `json:"email"`
	DisplayName *string    `json:"display_name"`
	Locale      string     `json:"locale"`
	TOTPEnabled bool       `json:"totp_enabled"`
	CreatedAt   time.Time  `json:"created_at"`
	LastSeenAt  *time.Time `json:"last_seen_at"`
}

// Public returns the MePublic view of u.
func (u User) Public() MePublic {
	out := MePublic{
		UserID: u.ID, Email: u.Email, DisplayName: u.DisplayName, Locale: u.Locale,
		TOTPEnabled: u.TOTPEnabled, CreatedAt: u.CreatedAt.UTC(),
	}
	if !u.LastSeenAt.IsZero() {
		t := u.LastSeenAt.UTC()
		out.LastSeenAt = &t
	}
	return out
}

// The kind of a Session and of an AuthChallenge, which verify-code answers either of
// (docs/api.md §4.2): a generated client decodes by it.
const (
	KindSession   = "session"
	KindChallenge = "challenge"
)

// SessionOut is the Session record (docs/api.md §10.3).
type SessionOut struct {
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
	User      MePublic  `json:"user"`
	Kind      string    `json:"kind"` // KindSession
}

// AuthChallengeOut is the AuthChallenge record (docs/api.md §2.9).
type AuthChallengeOut struct {
	Method    string  `json:"method"`
	Email     *string `json:"email"`
	TempToken *string `json:"temp_token"`
	Kind      string  `json:"kind"` // KindChallenge
}

// TotpEnrolmentOut is the TotpEnrolment record (docs/api.md §10.3).
type TotpEnrolmentOut struct {
	Secret     string `json:"secret"`
	OTPAuthURL string `json:"otpauth_url"`
	Issuer     string `json:"issuer"`
	Account    string `json:"account"`
}

// RecoveryCodesOut is the RecoveryCodes record (docs/api.md §10.3).
type RecoveryCodesOut struct {
	Codes       []string  `json:"codes"`
	GeneratedAt time.Time `json:"generated_at"`
}

// RecoveryCodesStatusOut is the RecoveryCodesStatus record (docs/api.md §10.3).
type RecoveryCodesStatusOut struct {
	Remaining int `json:"remaining"`
	Total     int `json:"total"`
}

// OkResponse is the OkResponse record (docs/api.md §10.3).
type OkResponse struct {
	OK bool `json:"ok"`
}

type requestCodeIn struct {
	Email string `json:"email"`
}

type verifyCodeIn struct {
	Email string `json:"email"`
	Code  string `json:"code"`
}

type codeIn struct {
	Code string `json:"code"`
}

// profileIn keeps each member raw, so that an absent member (nil) and null differ
// (docs/api.md §4.2: only fields sent are written).
type profileIn struct {
	DisplayName json.RawMessage `json:"display_name"`
	Locale      json.RawMessage `json:"locale"`
}

// Public sentences of the handler errors (docs/api.md §7, shape 1).
const (
	// DetailInvalidCode is verify-code's one answer to every failure (docs/api.md §4.2, §7).
	DetailInvalidCode     = "Invalid or expired code"
	DetailInvalidTOTP     = "Invalid TOTP code"
	DetailInvalidRecovery = "Invalid recovery code"
	DetailTOTPEnabled     = "TOTP is already enabled; disable it before setting it up again"
	DetailTOTPNotEnabled  = "TOTP is not enabled on this account"
	DetailNoEnrolment     = "No TOTP enrolment is pending; call POST /console/auth/totp/setup first"
	DetailCodeRequests    = "Too many code requests for this address; retry later"
	DetailTOTPAttempts    = "Too many TOTP or recovery attempts for this account; retry later"
	DetailBusy            = "The account changed while this request ran; retry"
)

// Routes returns the console-auth group (docs/api.md §4.2): sign-in, TOTP, recovery codes, profile
// and logout. Mount Middleware(s) in the API's Config.Middleware so that the routes' Security
// is enforced.
func Routes(s *Service) []httpapi.Route {
	h := &handlers{s: s}
	tags := []string{"console auth"}
	session := []httpapi.Security{httpapi.SecuritySession}
	temp := []httpapi.Security{httpapi.SecurityTempToken}
	sessionOK := httpapi.JSONResponse("A session with a fresh token.", SessionSchema)
	limited := func(what string) httpapi.Response { return httpapi.ErrorResponse(what, httpapi.RetryAfter) }
	busy := httpapi.ErrorResponse("Concurrent changes to the account kept refusing the request; retry with backoff.")
	totpLimited := limited("More than 5 TOTP or recovery attempts on this account in the current 15-minute window " +
		"(one bucket shared by verify-totp, verify-recovery, totp/disable, recovery-codes/regenerate and key issuance).")
	routes := []httpapi.Route{
		{
			Method: http.MethodPost, Path: "/console/auth/request-code", OperationID: "requestCode", Tags: tags,
			Summary: "E-mail a sign-in code (sign-up and sign-in are one route)",
			Description: "Sends a 6-digit code, valid 10 minutes, to any address; an address without an account gets one " +
				"when the code is verified. The answer is the same whether or not the address has an account.",
			Body: RequestCodePayloadSchema,
			Responses: map[int]httpapi.Response{
				http.StatusOK:              httpapi.JSONResponse("Code sent: method email, email where it went.", AuthChallengeSchema),
				http.StatusTooManyRequests: limited("More than 5 code requests for this address in the current 15-minute window."),
			},
			Handler: httpapi.JSON(http.StatusOK, h.requestCode),
		},
		{
			Method: http.MethodPost, Path: "/console/auth/verify-code", OperationID: "verifyCode", Tags: tags,
			Summary: "Verify the e-mailed code: a session, or a TOTP challenge",
			Description: "A code works once, for 10 minutes and at most 5 tries. Without TOTP the answer is a Session; " +
				"with TOTP an AuthChallenge (method totp, temp_token) and never a session.",
			Body: VerifyCodePayloadSchema,
			Responses: map[int]httpapi.Response{
				http.StatusOK: httpapi.JSONResponse("A Session, or an AuthChallenge for an account with TOTP.",
					SessionOrChallengeSchema),
				http.StatusBadRequest:         httpapi.ErrorResponse("One answer for an unknown address and a wrong, expired, used or exhausted code."),
				http.StatusServiceUnavailable: busy,
			},
			Handler: httpapi.JSON(http.StatusOK, h.verifyCode),
		},
		{
			Method: http.MethodPost, Path: "/console/auth/verify-totp", OperationID: "verifyTotp", Tags: tags, Security: temp,
			Summary:     "Finish a TOTP sign-in with a code of the authenticator app",
			Description: "The user is the temp_token's. A code is accepted once: a replay is refused.",
			Body:        TotpCodePayloadSchema,
			Responses: map[int]httpapi.Response{
				http.StatusOK:                 sessionOK,
				http.StatusBadRequest:         httpapi.ErrorResponse("Wrong code, or a code already used."),
				http.StatusTooManyRequests:    totpLimited,
				http.StatusServiceUnavailable: busy,
			},
			Handler: httpapi.JSON(http.StatusOK, AsCaller(h.verifyTOTP)),
			Errors:  tempErrors,
		},
		{
			Method: http.MethodPost, Path: "/console/auth/verify-recovery", OperationID: "verifyRecovery", Tags: tags, Security: temp,
			Summary:     "Finish a TOTP sign-in with a recovery code",
			Description: "The user is the temp_token's. The recovery code is burned on use.",
			Body:        RecoveryCodePayloadSchema,
			Responses: map[int]httpapi.Response{
				http.StatusOK:                 sessionOK,
				http.StatusBadRequest:         httpapi.ErrorResponse("Unknown or already used recovery code."),
				http.StatusTooManyRequests:    totpLimited,
				http.StatusServiceUnavailable: busy,
			},
			Handler: httpapi.JSON(http.StatusOK, AsCaller(h.verifyRecovery)),
			Errors:  tempErrors,
		},
		{
			Method: http.MethodPost, Path: "/console/auth/totp/setup", OperationID: "setupTotp", Tags: tags, Security: session,
			Summary:     "Start a TOTP enrolment",
			Description: "A new secret, pending until confirmed; a second setup replaces a pending one.",
			Responses: map[int]httpapi.Response{
				http.StatusOK:       httpapi.JSONResponse("The secret to add to an authenticator app.", TotpEnrolmentSchema),
				http.StatusConflict: httpapi.ErrorResponse("TOTP is already enabled."),
			},
			Handler: httpapi.JSON(http.StatusOK, AsCaller(h.setupTOTP)),
		},
		{
			Method: http.MethodPost, Path: "/console/auth/totp/confirm", OperationID: "confirmTotp", Tags: tags, Security: session,
			Summary:     "Turn TOTP on with a code of the pending secret",
			Description: "Returns the recovery codes, in clear this once.",
			Body:        TotpCodePayloadSchema,
			Responses: map[int]httpapi.Response{
				http.StatusOK:                 httpapi.JSONResponse("TOTP is on; the recovery codes.", RecoveryCodesSchema),
				http.StatusBadRequest:         httpapi.ErrorResponse("Wrong code."),
				http.StatusConflict:           httpapi.ErrorResponse("TOTP is already enabled, or no enrolment is pending."),
				http.StatusServiceUnavailable: busy,
			},
			Handler: httpapi.JSON(http.StatusOK, AsCaller(h.confirmTOTP)),
		},
		{
			Method: http.MethodPost, Path: "/console/auth/totp/disable", OperationID: "disableTotp", Tags: tags, Security: session,
			Summary: "Turn TOTP off with a valid code",
			Description: "Discards the secret and the recovery codes and ends every session of the user, the caller's " +
				"included; the answer is the caller's new session.",
			Body: TotpCodePayloadSchema,
			Responses: map[int]httpapi.Response{
				http.StatusOK:                 httpapi.JSONResponse("TOTP is off; a new session for the caller.", SessionSchema),
				http.StatusBadRequest:         httpapi.ErrorResponse("Wrong code, or a code already used."),
				http.StatusConflict:           httpapi.ErrorResponse("TOTP is not enabled."),
				http.StatusTooManyRequests:    totpLimited,
				http.StatusServiceUnavailable: busy,
			},
			Handler: httpapi.JSON(http.StatusOK, AsCaller(h.disableTOTP)),
		},
		{
			Method: http.MethodGet, Path: "/console/auth/recovery-codes", OperationID: "getRecoveryCodesStatus", Tags: tags, Security: session,
			Summary:     "How many recovery codes are left",
			Description: "How many of the current set of recovery codes are still unused, out of how many; 0 and 0 when TOTP is off.",
			Responses: map[int]httpapi.Response{
				http.StatusOK: httpapi.JSONResponse("Remaining and total; 0 and 0 without TOTP.", RecoveryCodesStatusSchema),
			},
			Handler: httpapi.JSON(http.StatusOK, AsCaller(h.recoveryStatus)),
		},
		{
			Method: http.MethodPost, Path: "/console/auth/recovery-codes/regenerate", OperationID: "regenerateRecoveryCodes", Tags: tags, Security: session,
			Summary:     "Replace the recovery codes, with a live TOTP code",
			Description: "The old set stops working; the new one is shown this once.",
			Body:        TotpCodePayloadSchema,
			Responses: map[int]httpapi.Response{
				http.StatusOK:                 httpapi.JSONResponse("The new recovery codes.", RecoveryCodesSchema),
				http.StatusBadRequest:         httpapi.ErrorResponse("Wrong code, or a code already used."),
				http.StatusConflict:           httpapi.ErrorResponse("TOTP is not enabled."),
				http.StatusTooManyRequests:    totpLimited,
				http.StatusServiceUnavailable: busy,
			},
			Handler: httpapi.JSON(http.StatusOK, AsCaller(h.regenerate)),
		},
		{
			Method: http.MethodGet, Path: "/console/auth/me", OperationID: "getMe", Tags: tags, Security: session,
			Summary:     "The signed-in user, with a fresh session token",
			Description: "Renews the session: the answer holds a new token valid 30 days; the old one stays valid until its own expiry or logout.",
			Responses:   map[int]httpapi.Response{http.StatusOK: sessionOK, http.StatusServiceUnavailable: busy},
			Handler:     httpapi.JSON(http.StatusOK, AsCaller(h.me)),
		},
		{
			Method: http.MethodPatch, Path: "/console/auth/me", OperationID: "updateMe", Tags: tags, Security: session,
			Summary:     "Update the profile; only the fields sent are written",
			Description: "Members left out are kept. display_name null, or an empty string, clears the name.",
			Body:        ProfileUpdateSchema,
			Responses: map[int]httpapi.Response{
				http.StatusOK: httpapi.JSONResponse("The updated user.", MePublicSchema),
			},
			Handler: httpapi.JSON(http.StatusOK, AsCaller(h.updateMe)),
		},
		{
			Method: http.MethodPost, Path: "/console/auth/logout", OperationID: "logout", Tags: tags, Security: session,
			Summary:     "Sign out everywhere: every token of the user ends",
			Description: "Ends every session token of the user, on every device, not only the one sent.",
			Responses: map[int]httpapi.Response{
				http.StatusOK: httpapi.JSONResponse("Signed out.", OkResponseSchema),
			},
			Handler: httpapi.JSON(http.StatusOK, AsCaller(h.logout)),
		},
	}
	return ErrorTable.Defaults(routes)
}

type handlers struct {
	s *Service
}

// ErrorTable gives the package's errors their status and public sentence (docs/api.md §7, shape 1);
// the cause is logged, never sent. A token valid a moment ago (logged out or used meanwhile)
// is 401 with the session's sentence; the temp-token routes use tempErrors.
var ErrorTable = httpapi.ErrorTable{
	{Err: CodeRequestCap.Refusal(), Status: http.StatusTooManyRequests, Detail: DetailCodeRequests},
	{Err: ErrLimited, Status: http.StatusTooManyRequests, Detail: DetailTOTPAttempts},
	{Err: ErrInvalidCode, Status: http.StatusBadRequest, Detail: DetailInvalidCode},
	{Err: ErrInvalidTOTP, Status: http.StatusBadRequest, Detail: DetailInvalidTOTP},
	{Err: ErrInvalidRecoveryCode, Status: http.StatusBadRequest, Detail: DetailInvalidRecovery},
	{Err: ErrTOTPEnabled, Status: http.StatusConflict, Detail: DetailTOTPEnabled},
	{Err: ErrTOTPNotEnabled, Status: http.StatusConflict, Detail: DetailTOTPNotEnabled},
	{Err: ErrNoEnrolment, Status: http.StatusConflict, Detail: DetailNoEnrolment},
	{Err: ErrConflict, Status: http.StatusServiceUnavailable, Detail: DetailBusy},
	{Err: ErrUnauthenticated, Status: http.StatusUnauthorized, Detail: DetailInvalidSession},
	{Err: ErrUserNotFound, Status: http.StatusUnauthorized, Detail: DetailInvalidSession},
}

// tempErrors is ErrorTable for the routes of a temp token (verify-totp, verify-recovery).
var tempErrors = ErrorTable.With(
	httpapi.ErrorRule{Err: ErrUnauthenticated, Status: http.StatusUnauthorized, Detail: DetailInvalidTemp},
	httpapi.ErrorRule{Err: ErrUserNotFound, Status: http.StatusUnauthorized, Detail: DetailInvalidTemp},
)

// AsCaller adapts an operation of the authenticated caller to a typed handler (httpapi.JSON);
// Middleware sets the caller on every route with Security, so its absence is a wiring mistake.
func AsCaller[In, Out any](f func(r *httpapi.Request[In], c Caller) (Out, error)) func(*httpapi.Request[In]) (Out, error) {
	return func(r *httpapi.Request[In]) (Out, error) {
		c, ok := CallerFrom(r.Context())
		if !ok {
			var zero Out
			return zero, errors.New("consoleauth: route served without Middleware")
		}
		return f(r, c)
	}
}

func sessionOut(s *Session, err error) (SessionOut, error) {
	if err != nil {
		return SessionOut{}, err
	}
	return SessionOut{Token: s.Token, ExpiresAt: s.ExpiresAt.UTC(), User: s.User.Public(), Kind: KindSession}, nil
}

func recoveryOut(rc RecoveryCodes, err error) (RecoveryCodesOut, error) {
	return RecoveryCodesOut{Codes: rc.Codes, GeneratedAt: rc.GeneratedAt.UTC()}, err
}

func (h *handlers) requestCode(r *httpapi.Request[requestCodeIn]) (AuthChallengeOut, error) {
	email, err := h.s.RequestCode(r.Context(), r.Body.Email)
	return AuthChallengeOut{Method: "email", Email: &email, Kind: KindChallenge}, err
}

// verifyCode answers a SessionOut, or an AuthChallengeOut for an account with TOTP.
func (h *handlers) verifyCode(r *httpapi.Request[verifyCodeIn]) (any, error) {
	sess, ch, err := h.s.VerifyCode(r.Context(), r.Body.Email, r.Body.Code)
	switch {
	case errors.Is(err, ErrUnauthenticated):
		return nil, ErrInvalidCode // a logout raced the first session; the code is spent either way
	case err != nil:
		return nil, err
	case ch != nil:
		return AuthChallengeOut{Method: "totp", TempToken: &ch.TempToken, Kind: KindChallenge}, nil
	}
	return sessionOut(sess, nil)
}

func (h *handlers) verifyTOTP(r *httpapi.Request[codeIn], c Caller) (SessionOut, error) {
	sess, err := h.s.SignInTOTP(r.Context(), c, r.Body.Code)
	if errors.Is(err, ErrTOTPNotEnabled) {
		err = ErrInvalidTOTP
	}
	return sessionOut(sess, err)
}

func (h *handlers) verifyRecovery(r *httpapi.Request[codeIn], c Caller) (SessionOut, error) {
	return sessionOut(h.s.SignInRecovery(r.Context(), c, r.Body.Code))
}

func (h *handlers) setupTOTP(r *httpapi.Request[httpapi.NoBody], c Caller) (TotpEnrolmentOut, error) {
	e, err := h.s.SetupTOTP(r.Context(), c.User.ID)
	return TotpEnrolmentOut(e), err
}

func (h *handlers) confirmTOTP(r *httpapi.Request[codeIn], c Caller) (RecoveryCodesOut, error) {
	return recoveryOut(h.s.ConfirmTOTP(r.Context(), c.User.ID, r.Body.Code))
}

func (h *handlers) disableTOTP(r *httpapi.Request[codeIn], c Caller) (SessionOut, error) {
	return sessionOut(h.s.DisableTOTP(r.Context(), c.User.ID, r.Body.Code))
}

func (h *handlers) recoveryStatus(r *httpapi.Request[httpapi.NoBody], c Caller) (RecoveryCodesStatusOut, error) {
	remaining, total, err := h.s.RecoveryStatus(r.Context(), c.User.ID)
	return RecoveryCodesStatusOut{Remaining: remaining, Total: total}, err
}

func (h *handlers) regenerate(r *httpapi.Request[codeIn], c Caller) (RecoveryCodesOut, error) {
	return recoveryOut(h.s.RegenerateRecovery(r.Context(), c.User.ID, r.Body.Code))
}

func (h *handlers) me(r *httpapi.Request[httpapi.NoBody], c Caller) (SessionOut, error) {
	return sessionOut(h.s.Renew(r.Context(), c))
}

func (h *handlers) updateMe(r *httpapi.Request[profileIn], c Caller) (MePublic, error) {
	var ch ProfileChange
	if r.Body.DisplayName != nil {
		ch.SetDisplayName = true
		if err := json.Unmarshal(r.Body.DisplayName, &ch.DisplayName); err != nil {
			return MePublic{}, err
		}
		if ch.DisplayName != nil && *ch.DisplayName == "" {
			ch.DisplayName = nil // "" clears, as null does (docs/api.md §4.2)
		}
	}
	if r.Body.Locale != nil {
		if err := json.Unmarshal(r.Body.Locale, &ch.Locale); err != nil {
			return MePublic{}, err
		}
	}
	u, err := h.s.UpdateProfile(r.Context(), c.User.ID, ch)
	return u.Public(), err
}

func (h *handlers) logout(r *httpapi.Request[httpapi.NoBody], c Caller) (OkResponse, error) {
	return OkResponse{OK: true}, h.s.Logout(r.Context(), c.User.ID)
}
