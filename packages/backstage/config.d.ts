// Backstage reads this to validate app-config and to keep `berth.token` out of the frontend and the logs.
export interface Config {
  berth: {
    /** Berth's base URL, e.g. https://berth.example.com. */
    baseUrl: string;
    /**
     * A bearer token for Berth's /v1 API. Without it, a token for `berth.entraScope` is asked of Entra ID
     * with Azure's DefaultAzureCredential (workload identity on AKS).
     * @visibility secret
     */
    token?: string;
    /** The Entra ID scope of Berth's API app registration, e.g. api://berth/.default. */
    entraScope?: string;
    /** Bound on one request to Berth, in milliseconds (default 30000). */
    requestTimeoutMs?: number;
    scaffolder?: {
      /** Seconds between two reads of a team's status by berth:team:wait (default 5). */
      waitPollSeconds?: number;
    };
    catalog?: {
      /** Minutes between full refreshes of every team (default 30). */
      fullRefreshMinutes?: number;
      /** Seconds between cheap polls of GET /v1/status for changes (default 30). */
      pollSeconds?: number;
    };
  };
}
