// Shared building blocks: form state that shows API errors next to their fields (docs/api.md §7:
// 422 loc), labelled inputs, notices, copy buttons and loaders.
import type { ComponentChildren, JSX } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, type ValidationItem } from './api';

/** FormState is what useForm exposes to a form. */
export interface FormState {
  busy: boolean;
  /** fields maps a field name to the message to show next to it. */
  fields: Record<string, string>;
  /** error is the message for the whole form (a handler error, 429 or a body-level 422). */
  error: string | null;
  /** run calls fn, recording its ApiError; it returns fn's result, or undefined on error. */
  run<T>(fn: () => Promise<T>): Promise<T | undefined>;
  setError(field: string | null, message: string | null): void;
}

/**
 * Locate places a validation item whose loc is deeper than ["body", field] at the form field it
 * concerns, with the message to show there (a polygon's ["body","area","coordinates",0,5] at
 * the polygon's input, saying "position 5"); null leaves the item to formErrors' own rule.
 */
export type Locate = (v: ValidationItem) => { field: string; msg: string } | null;

/**
 * formErrors splits an error into per-field messages and one form-level message: validation
 * items under ["body", field] (or ["query", field]) go to that field when the form has it,
 * everything else to the form. locate, when given, places each item first; the items it
 * places at a field of the form are not looked at again.
 */
export function formErrors(err: unknown, known: string[], locate?: Locate): { fields: Record<string, string>; error: string | null } {
  if (!(err instanceof ApiError)) {
    return { fields: {}, error: 'Something went wrong. Please try again.' };
  }
  if (err.validation.length === 0) return { fields: {}, error: err.message };
  const fields: Record<string, string> = {};
  const rest: string[] = [];
  let unplaced = err;
  if (locate) {
    const left: ValidationItem[] = [];
    for (const v of err.validation) {
      const at = locate(v);
      if (at && known.includes(at.field)) {
        if (!(at.field in fields)) fields[at.field] = at.msg;
      } else left.push(v);
    }
    unplaced = new ApiError(err.status, err.message, left);
  }
  for (const [f, msg] of Object.entries({ ...unplaced.fieldErrors('query'), ...unplaced.fieldErrors('body') })) {
    if (known.includes(f)) {
      if (!(f in fields)) fields[f] = msg;
    } else rest.push(f ? `${f}: ${msg}` : msg);
  }
  return { fields, error: rest.length > 0 ? rest.join(' ') : Object.keys(fields).length ? null : err.message };
}

/**
 * useForm holds a form's busy flag and errors; known lists the form's field names, and locate
 * (see formErrors) places the service's errors whose loc does not name a field of the form.
 */
export function useForm(known: string[], locate?: Locate): FormState {
  const [busy, setBusy] = useState(false);
  const [fields, setFields] = useState<Record<string, string>>({});
  const [error, setErr] = useState<string | null>(null);
  const knownRef = useRef(known);
  knownRef.current = known;
  const locateRef = useRef(locate);
  locateRef.current = locate;
  const run = useCallback(async <T,>(fn: () => Promise<T>): Promise<T | undefined> => {
    setBusy(true);
    setFields({});
    setErr(null);
    try {
      return await fn();
    } catch (e) {
      const r = formErrors(e, knownRef.current, locateRef.current);
      setFields(r.fields);
      setErr(r.error);
      return undefined;
    } finally {
      setBusy(false);
    }
  }, []);
  const setError = useCallback((field: string | null, message: string | null) => {
    if (field === null) setErr(message);
    else setFields((f) => ({ ...f, [field]: message ?? '' }));
  }, []);
  return { busy, fields, error, run, setError };
}

/**
 * showProblems puts each client-side problem next to its field (one of fields, the form's
 * fields), and clears the messages that an earlier submit left on the form and its other
 * fields; it says whether there is a problem.
 */
export function showProblems(form: FormState, fields: string[], problems: Record<string, string | null>): boolean {
  form.setError(null, null);
  for (const f of fields) form.setError(f, problems[f] ?? null);
  return Object.values(problems).some((p) => p !== null);
}

let nextId = 0;
function useId(prefix: string) {
  const ref = useRef<string>();
  if (!ref.current) ref.current = `${prefix}-${++nextId}`;
  return ref.current;
}

type InputProps = Omit<JSX.InputHTMLAttributes<HTMLInputElement>, 'onInput' | 'value'>;

/** Field is a labelled input whose API error shows under it and is announced with it. */
export function Field(props: {
  label: string;
  name: string;
  value: string;
  onInput: (v: string) => void;
  form: FormState;
  hint?: ComponentChildren;
  input?: InputProps;
}) {
  const id = useId(props.name);
  const err = props.form.fields[props.name];
  const described = [err ? id + '-error' : '', props.hint ? id + '-hint' : ''].filter(Boolean).join(' ') || undefined;
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      <input
        id={id}
        name={props.name}
        value={props.value}
        onInput={(e) => props.onInput((e.currentTarget as HTMLInputElement).value)}
        aria-invalid={err ? 'true' : undefined}
        aria-describedby={described}
        {...props.input}
      />
      {props.hint && (
        <p class="hint" id={id + '-hint'}>
          {props.hint}
        </p>
      )}
      {err && (
        <p class="field-error" id={id + '-error'} role="alert">
          {err}
        </p>
      )}
    </div>
  );
}

/** FormError shows a form-level error. */
export function FormError({ form }: { form: FormState }) {
  return form.error ? (
    <p class="alert error" role="alert">
      {form.error}
    </p>
  ) : null;
}

/** Notice is a status message. */
export function Notice(props: { kind?: 'info' | 'error' | 'success' | 'warning'; children: ComponentChildren }) {
  const kind = props.kind ?? 'info';
  return (
    <div class={'alert ' + kind} role={kind === 'error' ? 'alert' : 'status'}>
      {props.children}
    </div>
  );
}

/** CopyButton copies text to the clipboard and says so. */
export function CopyButton(props: { text: string; label?: string }) {
  const [done, setDone] = useState<string | null>(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(props.text);
      setDone('Copied');
    } catch {
      setDone('Copy failed: select the text and copy it');
    }
  };
  return (
    <span>
      <button type="button" onClick={copy}>
        {props.label ?? 'Copy'}
      </button>
      <span class="copy-state" role="status">
        {done}
      </span>
    </span>
  );
}

/** Load is the state of a read: data, or the error that stopped it. */
export interface Load<T> {
  data: T | null;
  error: ApiError | null;
  loading: boolean;
  reload: () => void;
}

/** useLoad runs fn when deps change and on reload. */
export function useLoad<T>(fn: () => Promise<T>, deps: unknown[]): Load<T> {
  const [state, setState] = useState<{ data: T | null; error: ApiError | null; loading: boolean }>({ data: null, error: null, loading: true });
  const [n, setN] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    fn().then(
      (data) => live && setState({ data, error: null, loading: false }),
      (e) => live && setState({ data: null, error: e instanceof ApiError ? e : new ApiError(0, 'Something went wrong.'), loading: false }),
    );
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, n]);
  return { ...state, reload: () => setN((x) => x + 1) };
}

/** Loading shows a load's state until it has data. */
export function Loading<T>(props: { load: Load<T>; children: (data: T) => ComponentChildren }) {
  const { load } = props;
  if (load.data !== null) return <>{props.children(load.data)}</>;
  if (load.error) return <Notice kind="error">{load.error.message}</Notice>;
  return (
    <p class="muted" role="status">
      Loading…
    </p>
  );
}

/** Msg is a page's message on how something went. */
export type Msg = { kind: 'success' | 'error'; text: string };

/** RowActions is what useRowActions exposes to a list whose rows have actions. */
export interface RowActions {
  msg: Msg | null;
  setMsg(m: Msg | null): void;
  /** busyId is the id of the row whose action is running, or null. */
  busyId: string | null;
  /**
   * run clears the message, marks row id busy and calls fn; then it shows done's text for fn's
   * result (nothing when done returns null), or "name: error" when fn fails, frees the row and
   * reads the list again.
   */
  run<T>(id: string, name: string, fn: () => Promise<T>, done: (r: T) => string | null): Promise<void>;
}

/** useRowActions holds a list's message and busy row for its row actions; reload reads the list again. */
export function useRowActions(reload: () => void): RowActions {
  const [msg, setMsg] = useState<Msg | null>(null);
  const [busyId, setBusyId] = useState<string | null>(null);
  const run = async <T,>(id: string, name: string, fn: () => Promise<T>, done: (r: T) => string | null) => {
    setMsg(null);
    setBusyId(id);
    try {
      const text = done(await fn());
      if (text) setMsg({ kind: 'success', text });
    } catch (e) {
      setMsg({ kind: 'error', text: `${name}: ${(e as Error).message}` });
    }
    setBusyId(null);
    reload();
  };
  return { msg, setMsg, busyId, run };
}

/** RowEditor is one row of a list edited at a time, in a form below the list (useRowEditor). */
export interface RowEditor<T> {
  editing: T | null;
  /** close closes the form and gives the focus back to the row's Edit button. */
  close(): void;
  /** forget closes the form without moving the focus, when row id is removed. */
  forget(id: string): void;
  /** editProps are the props of row's Edit button, which opens and closes its form. */
  editProps(row: T): JSX.HTMLAttributes<HTMLButtonElement>;
}

/**
 * useRowEditor holds which row of a list is edited, in the form of id formId: idOf names a
 * row, and onToggle runs whenever an Edit button is pressed (to clear the page's notice).
 */
export function useRowEditor<T>(idOf: (row: T) => string, formId: string, onToggle: () => void): RowEditor<T> {
  const [editing, setEditing] = useState<T | null>(null);
  const buttons = useRef<Record<string, HTMLButtonElement | null>>({});
  const editingId = editing === null ? null : idOf(editing);
  return {
    editing,
    close() {
      if (editingId !== null) buttons.current[editingId]?.focus();
      setEditing(null);
    },
    forget(id) {
      if (editingId === id) setEditing(null);
    },
    editProps(row) {
      const id = idOf(row);
      return {
        type: 'button',
        ref: (el: HTMLButtonElement | null) => {
          buttons.current[id] = el;
        },
        'aria-expanded': editingId === id,
        'aria-controls': editingId === id ? formId : undefined,
        onClick: () => {
          onToggle();
          setEditing(editingId === id ? null : row);
        },
      };
    },
  };
}

/** formatTime shows a timestamp in the reader's locale, or a dash. */
export function formatTime(v: string | null | undefined): string {
  if (!v) return '—';
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? v : d.toLocaleString();
}

/** formatNumber groups digits in the reader's locale. */
export function formatNumber(n: number | null | undefined): string {
  return n === null || n === undefined ? '—' : n.toLocaleString();
}

/** Confirm asks again before a destructive act; it is a pair of buttons, keyboard-first. */
export function Confirm(props: { label: string; question: string; confirmLabel?: string; onConfirm: () => void; disabled?: boolean }) {
  const [asking, setAsking] = useState(false);
  const yes = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (asking) yes.current?.focus();
  }, [asking]);
  if (!asking) {
    return (
      <button type="button" class="danger" disabled={props.disabled} onClick={() => setAsking(true)}>
        {props.label}
      </button>
    );
  }
  return (
    <span class="confirm" role="group" aria-label={props.question}>
      <span>{props.question}</span>{' '}
      <button
        type="button"
        class="danger"
        ref={yes}
        onClick={() => {
          setAsking(false);
          props.onConfirm();
        }}
      >
        {props.confirmLabel ?? 'Yes, ' + props.label.toLowerCase()}
      </button>{' '}
      <button type="button" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  );
}

/**
 * TypedConfirm guards an act that cannot be undone (deleting an account or an organisation):
 * its button opens a step, with the focus in it, that says what goes (children), asks for a text
 * typed to confirm (matches decides when it is right) and, when totp, an authenticator code.
 * The final button stays disabled until the text matches. act receives the code (undefined
 * without TOTP); its refusal (a 409's detail, a wrong code) shows in the step, and done runs
 * once it succeeds.
 */
export function TypedConfirm(props: {
  label: string;
  confirmLabel: string;
  typeLabel: string;
  typeHint?: ComponentChildren;
  matches: (typed: string) => boolean;
  totp: boolean;
  act: (totpCode: string | undefined) => Promise<unknown>;
  done: () => void;
  children: ComponentChildren;
}) {
  const [asking, setAsking] = useState(false);
  const [typed, setTyped] = useState('');
  const [code, setCode] = useState('');
  const form = useForm(['confirm', 'totp_code']);
  const open = useRef<HTMLButtonElement>(null);
  const step = useRef<HTMLFormElement>(null);
  // cancelled gives the keyboard back to the button that opened the step, once it shows again.
  const cancelled = useRef(false);
  useEffect(() => {
    if (asking) step.current?.querySelector<HTMLInputElement>('input')?.focus();
    else if (cancelled.current) open.current?.focus();
    cancelled.current = false;
  }, [asking]);
  const cancel = () => {
    cancelled.current = true;
    setAsking(false);
    setTyped('');
    setCode('');
    showProblems(form, ['confirm', 'totp_code'], {});
  };
  const submit = async (e: Event) => {
    e.preventDefault();
    if (!props.matches(typed)) return;
    if (showProblems(form, ['totp_code'], { totp_code: props.totp && code.trim() === '' ? 'Enter the code from your authenticator app.' : null })) return;
    const ok = await form.run(async () => {
      await props.act(props.totp ? code.trim() : undefined);
      return true;
    });
    if (ok) props.done();
  };
  if (!asking) {
    return (
      <button type="button" class="danger" ref={open} onClick={() => setAsking(true)}>
        {props.label}
      </button>
    );
  }
  return (
    <form ref={step} onSubmit={submit} noValidate>
      {props.children}
      <FormError form={form} />
      <Field label={props.typeLabel} name="confirm" value={typed} onInput={setTyped} form={form} hint={props.typeHint} input={{ autocomplete: 'off', autocapitalize: 'none', spellcheck: false }} />
      {props.totp && (
        <Field label="Authenticator code" name="totp_code" value={code} onInput={setCode} form={form} input={{ inputMode: 'numeric', autocomplete: 'one-time-code', maxLength: 16 }} />
      )}
      <button type="submit" class="danger" disabled={form.busy || !props.matches(typed)}>
        {props.confirmLabel}
      </button>{' '}
      <button type="button" onClick={cancel} disabled={form.busy}>
        Cancel
      </button>
    </form>
  );
}
