import {
  AuthorizationError,
  type AuthRequest,
  authorizationErrorRedirect,
  CimdFetchError,
  type OAuthHelpers,
} from "@cloudflare/workers-oauth-provider";
import type { Context } from "hono";
import { openControl } from "../control/control-db";
import { type AuthenticatedKey, findActiveKey } from "../control/tenants";
import { type Scope, scopeAllows } from "../core/tenants/api-keys";
import { base64Url } from "../crypto";
import type { Env } from "../env";
import { authorizationServerFor, OAUTH_SCOPES } from "./authorization-server";
import { type ConsentForm, consentPage, errorPage } from "./consent-page";
import type { GrantMetadata, GrantProps } from "./grant-props";

/**
 * /oauth/authorize: the library validates the request (client, exact redirect URI, PKCE S256, resource) and
 * keeps it server-side behind a one-time handle bound to this browser by a __Host- cookie (that binding is
 * the CSRF protection: a forged POST has no handle the browser's cookie matches). The person signs in by
 * pasting an API key; the grant is tied to that key and never reaches further than it.
 */

type Ctx = Context<{ Bindings: Env }>;

const MAX_PROJECTS = 100;
const MAX_PROJECT_LENGTH = 200;

export async function showConsent(c: Ctx): Promise<Response> {
  const oauth = helpers(c);
  if (!oauth) return noOAuthHere();
  try {
    const request = await oauth.parseAuthRequest(c.req.raw);
    // OAuth 2.1 and MCP: every client uses PKCE; the library already insists for public clients.
    if (!request.codeChallenge) {
      return redirect(
        authorizationErrorRedirect(
          request,
          "invalid_request",
          "PKCE is required: send code_challenge with code_challenge_method=S256",
        ),
      );
    }
    const requested = request.scope.filter(isOAuthScope);
    return await renderConsent(oauth, request, { checked: requested.length ? requested : OAUTH_SCOPES, projects: "" });
  } catch (error) {
    return authorizationFailure(error);
  }
}

export async function submitConsent(c: Ctx): Promise<Response> {
  const oauth = helpers(c);
  if (!oauth) return noOAuthHere();
  const origin = c.req.header("origin");
  if (origin && origin !== new URL(c.req.url).origin)
    return htmlError(403, "Not allowed", "This form may only be sent from its own page.");
  let form: FormData;
  try {
    form = await c.req.raw.formData();
  } catch {
    return htmlError(
      400,
      "Not a form",
      "Send the consent form as application/x-www-form-urlencoded or multipart/form-data.",
    );
  }
  const handle = String(form.get("handle") ?? "");
  try {
    // Anything but an explicit Approve declines.
    if (form.get("decision") !== "approve") {
      const denied = await oauth.denyConsent(c.req.raw, handle, { description: "The person declined the connection" });
      return new Response(null, { status: 302, headers: denied.headers });
    }
    // Consumes the handle; on a mistake below the page is shown again with a fresh one.
    const approved = await oauth.approveConsent(c.req.raw, handle);
    const checked = form.getAll("scope").map(String);
    const projectsText = String(form.get("projects") ?? "");
    const decision = await decide(c.env, String(form.get("api_key") ?? "").trim(), checked, projectsText);
    if ("error" in decision) {
      const page = await renderConsent(
        oauth,
        approved.request,
        { checked, projects: projectsText, error: decision.error },
        400,
      );
      for (const cookie of approved.headers.getSetCookie()) page.headers.append("Set-Cookie", cookie);
      return page;
    }
    const details = await oauth.describeConsent(approved.request);
    const metadata: GrantMetadata = {
      ...decision.props,
      clientName: details.clientName,
      redirectHost: details.redirectHost,
    };
    const { redirectTo } = await oauth.completeAuthorization({
      request: approved.request,
      userId: decision.props.keyId,
      metadata,
      scope: decision.props.scopes,
      props: decision.props,
    });
    approved.headers.set("Location", redirectTo);
    return new Response(null, { status: 302, headers: approved.headers });
  } catch (error) {
    return authorizationFailure(error);
  }
}

/** The signed-in key and what the person approved, checked against each other; or what to fix. */
async function decide(
  env: Env,
  secret: string,
  checked: string[],
  projectsText: string,
): Promise<{ props: GrantProps } | { error: string }> {
  if (!secret) return { error: "Paste an API key to sign in." };
  const key = await findActiveKey(openControl(env.CONTROL), secret);
  if (!key) return { error: "This API key is not valid or has been revoked." };
  if (!scopeAllows(key.scopes, "write"))
    return { error: "This key has only the read scope: sign in with a key that has the write or admin scope." };
  const scopes = OAUTH_SCOPES.filter((s) => checked.includes(s));
  if (scopes.length === 0) return { error: "Choose at least one scope to allow." };
  const projects = grantProjects(key, projectsText);
  if (typeof projects === "string") return { error: projects };
  return {
    props: {
      tenantId: key.tenantId,
      keyId: key.keyId,
      scopes: scopes.filter((s) => scopeAllows(key.scopes, s)) as Scope[],
      projects,
    },
  };
}

/** The projects typed on the page, within the key's; blank = all the key reaches. A string is the mistake. */
function grantProjects(key: AuthenticatedKey, text: string): string[] | null | string {
  const typed = [
    ...new Set(
      text
        .split(",")
        .map((p) => p.trim())
        .filter(Boolean),
    ),
  ];
  if (typed.length === 0) return key.projects;
  if (typed.length > MAX_PROJECTS) return `Name at most ${MAX_PROJECTS} projects.`;
  const tooLong = typed.find((p) => p.length > MAX_PROJECT_LENGTH);
  if (tooLong) return `A project name has at most ${MAX_PROJECT_LENGTH} characters.`;
  const outside = key.projects === null ? undefined : typed.find((p) => !key.projects!.includes(p));
  if (outside !== undefined)
    return `This key cannot reach project '${outside}' (it reaches: ${key.projects!.join(", ")}).`;
  return typed;
}

async function renderConsent(
  oauth: OAuthHelpers,
  request: AuthRequest,
  form: Omit<ConsentForm, "handle">,
  status = 200,
): Promise<Response> {
  const details = await oauth.describeConsent(request); // first: a failed CIMD lookup leaves nothing in KV
  const consent = await oauth.beginConsent(request);
  const nonce = base64Url(crypto.getRandomValues(new Uint8Array(16)));
  const headers = consent.headers;
  headers.set("Content-Type", "text/html; charset=utf-8");
  headers.set("Content-Security-Policy", pagePolicy(nonce, details.redirectUri));
  // same-origin, not no-referrer: with no-referrer the browser posts the form with `Origin: null`.
  headers.set("Referrer-Policy", "same-origin");
  return new Response(consentPage(details, { ...form, handle: consent.handle }, nonce), { status, headers });
}

/**
 * No script at all; styles only by nonce; no framing. form-action must also allow the client's redirect
 * origin: browsers check it on the redirect that follows the form.
 */
function pagePolicy(nonce: string, redirectUri?: string): string {
  const redirectOrigin = redirectUri ? new URL(redirectUri).origin : "null";
  const formAction = redirectOrigin === "null" ? "'self'" : `'self' ${redirectOrigin}`;
  return `default-src 'none'; style-src 'nonce-${nonce}'; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`;
}

/**
 * A failure the client may hear about (the library validated its redirect URI) goes back to it as an OAuth
 * error redirect with state and iss; anything else is shown here and never redirected.
 */
function authorizationFailure(error: unknown): Response {
  if (error instanceof AuthorizationError) {
    if (error.redirectTo) return redirect(error.redirectTo);
    return htmlError(400, "This authorization request cannot continue", error.description);
  }
  if (error instanceof CimdFetchError)
    return htmlError(
      400,
      "This app could not be verified",
      "Its client metadata document could not be fetched or is not valid.",
    );
  throw error;
}

function helpers(c: Ctx): OAuthHelpers | null {
  return authorizationServerFor(c.req.url)?.getOAuthApi(c.env) ?? null;
}

function noOAuthHere(): Response {
  return htmlError(
    400,
    "OAuth is not available here",
    "Connect over https (or http://localhost for local development).",
  );
}

function redirect(location: string): Response {
  return new Response(null, { status: 302, headers: { Location: location, "Cache-Control": "no-store" } });
}

function htmlError(status: number, title: string, message: string): Response {
  const nonce = base64Url(crypto.getRandomValues(new Uint8Array(16)));
  return new Response(errorPage(title, message, nonce), {
    status,
    headers: {
      "Content-Type": "text/html; charset=utf-8",
      "Content-Security-Policy": pagePolicy(nonce),
      "Cache-Control": "no-store",
      "X-Frame-Options": "DENY",
    },
  });
}

function isOAuthScope(scope: string): scope is (typeof OAUTH_SCOPES)[number] {
  return (OAUTH_SCOPES as readonly string[]).includes(scope);
}
