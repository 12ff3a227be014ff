// A real OpenID provider for the tests: panva's oidc-provider, on loopback, with its development
// login pages (any password) and three people. Started and stopped by tests/support/oidc.py.
//
// Environment: OIDC_ISSUER (http://127.0.0.1:<port>), OIDC_CLIENT_ID, OIDC_CLIENT_SECRET,
// OIDC_REDIRECT_URI. Prints "ready <issuer>" once it listens.
import Provider from "oidc-provider";

const people = {
  ada: { name: "Ada Lovelace", email: "ada@example.com", groups: ["finance"] },
  grace: { name: "Grace Hopper", email: "grace@example.com", groups: ["finance", "finance-leads"] },
  bob: { name: "Bob", email: "bob@example.com", groups: ["support"] },
};

const issuer = process.env.OIDC_ISSUER;
const provider = new Provider(issuer, {
  clients: [{
    client_id: process.env.OIDC_CLIENT_ID,
    client_secret: process.env.OIDC_CLIENT_SECRET,
    redirect_uris: [process.env.OIDC_REDIRECT_URI],
    grant_types: ["authorization_code"],
    response_types: ["code"],
    token_endpoint_auth_method: "client_secret_basic",
  }],
  claims: { openid: ["sub"], profile: ["name", "groups"], email: ["email"] },
  async findAccount(ctx, id) {
    return {
      accountId: id,
      async claims() {
        return { sub: id, ...(people[id] ?? { name: id, groups: [] }) };
      },
    };
  },
  pkce: { required: () => true },
  cookies: { keys: ["a test provider's cookie key, not a secret"] },
  features: { devInteractions: { enabled: true } },
});

const { port } = new URL(issuer);
provider.listen(Number(port), "127.0.0.1", () => {
  console.log(`ready ${issuer}`);
});
