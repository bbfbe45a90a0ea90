(ns scm.xtdb-http
  "A small HTTP/JSON front for an XTDB 1.x node, started as an XTDB module.

  Why it exists: the package registry this project can reach serves
  xtdb-core 1.24.5 but not com.xtdb/xtdb-http-server (any version), so this
  module speaks the subset of XTDB's documented `/_xtdb/*` HTTP API that the
  Rust client uses, with the same paths, parameters and JSON shapes. Storage,
  transactions, `match`, history and queries are XTDB's own (xtdb.api).

  Endpoints: GET status, sync, await-tx, tx-committed, latest-completed-tx,
  entity (also ?history=true); POST submit-tx (JSON), query (EDN body).

  JSON -> EDN follows XTDB's http-server: object keys become keywords at every
  depth (\"xt/id\" -> :xt/id), integers longs, decimals doubles, null kept.
  EDN -> JSON writes a keyword key back as its full text, so keys round-trip."
  (:require [clojure.data.json :as json]
            [clojure.edn :as edn]
            [clojure.string :as str]
            [clojure.tools.logging :as log]
            [xtdb.api :as xt]
            [xtdb.system :as sys])
  (:import [com.sun.net.httpserver HttpExchange HttpHandler HttpServer]
           [java.io Closeable]
           [java.net InetSocketAddress URLDecoder]
           [java.nio.charset StandardCharsets]
           [java.time Duration Instant OffsetDateTime ZoneOffset]
           [java.time.format DateTimeFormatter]
           [java.util Date]
           [java.util.concurrent Executors TimeoutException]))

;; ---- JSON <-> EDN ----

(defn- key->json [k]
  ;; (str :xt/id) is ":xt/id"; dropping the colon gives back the exact JSON key.
  (if (keyword? k) (subs (str k) 1) (str k)))

(def ^:private ^DateTimeFormatter millis-utc
  ;; Always three fraction digits (Instant/toString drops a zero fraction):
  ;; XTDB tx times are milliseconds, and clients read them back as such.
  (.withZone (DateTimeFormatter/ofPattern "uuuu-MM-dd'T'HH:mm:ss.SSS'Z'") ZoneOffset/UTC))

(defn- ->json-data
  "EDN data as plain JSON-able values."
  [v]
  (cond
    (map? v) (into {} (map (fn [[k x]] [(key->json k) (->json-data x)])) v)
    (or (sequential? v) (set? v)) (mapv ->json-data v)
    (instance? Date v) (.format millis-utc (.toInstant ^Date v))
    (keyword? v) (key->json v)
    (or (nil? v) (string? v) (number? v) (boolean? v)) v
    :else (str v)))

(defn- write-json ^String [v]
  (json/write-str (->json-data v)))

(defn- read-json [^String s]
  ;; :bigdec false keeps decimals as doubles, as XTDB's own server does.
  (json/read-str s :key-fn keyword :bigdec false))

;; ---- request helpers ----

(defn- bad-request [msg & [data]]
  (ex-info msg (assoc data ::status 400)))

(defn- query-params [^HttpExchange ex]
  (let [raw (.getRawQuery (.getRequestURI ex))]
    (if (str/blank? raw)
      {}
      (into {}
            (for [pair (str/split raw #"&")
                  :when (seq pair)
                  :let [[k v] (str/split pair #"=" 2)
                        dec #(URLDecoder/decode (or % "") StandardCharsets/UTF_8)]]
              [(dec k) (dec v)])))))

(defn- kebab->camel [s]
  (str/replace s #"-([a-z])" #(str/upper-case (second %))))

(defn- param
  "A query parameter by its kebab-case name; camelCase is accepted too."
  [params k]
  (or (get params k) (get params (kebab->camel k))))

(defn- long-param [params k]
  (when-let [s (param params k)]
    (or (parse-long s) (throw (bad-request (str "not an integer: " k "=" s))))))

(defn- date-param ^Date [params k]
  (when-let [s (param params k)]
    (Date/from (try (Instant/parse s)
                    (catch Exception _
                      (try (.toInstant (OffsetDateTime/parse s))
                           (catch Exception _
                             (throw (bad-request (str "not an RFC 3339 time: " k "=" s))))))))))

(defn- bool-param [params k]
  (= "true" (param params k)))

(defn- body-string ^String [^HttpExchange ex]
  (String. (.readAllBytes (.getRequestBody ex)) StandardCharsets/UTF_8))

(defn- tx->json [tx]
  (when tx
    {"txId" (::xt/tx-id tx) "txTime" (::xt/tx-time tx)}))

;; ---- handlers ----

(defn- status-json [node]
  ;; :xtdb.kv/kv-store -> "kvStore", as XTDB's server names status keys.
  (into {"httpServer" "scm.xtdb-http"}
        (map (fn [[k v]] [(kebab->camel (name k)) v]))
        (xt/status node)))

(defn- basis
  "A db basis for the request's tx-id / tx-time. A basis past the newest
  indexed tx is clamped to it (XTDB would throw NodeOutOfSync): reading
  'as of' a point after every write is reading the latest state."
  [node params]
  (let [tx-id (long-param params "tx-id")
        tx-time (date-param params "tx-time")
        latest (xt/latest-completed-tx node)]
    (cond
      (nil? latest) {}
      (and tx-id (>= tx-id (::xt/tx-id latest))) {::xt/tx latest}
      (and tx-time (not (.before tx-time (::xt/tx-time latest)))) {::xt/tx latest}
      tx-id {::xt/tx {::xt/tx-id tx-id}}
      tx-time {::xt/tx {::xt/tx-time tx-time}}
      :else {})))

(defn- tx-op [op]
  (when-not (and (vector? op) (string? (first op)))
    (throw (bad-request "each tx-op must be an array starting with an operation name" {:op op})))
  (let [[kind & args] op]
    (case kind
      "put" (into [::xt/put] args)
      "delete" (into [::xt/delete] args)
      "match" (into [::xt/match] args)
      (throw (bad-request (str "unsupported tx-op: " kind))))))

(defn- submit-tx [node ex]
  (let [body (try (read-json (body-string ex))
                  (catch Exception e (throw (bad-request (str "body is not JSON: " (.getMessage e))))))
        ops (when (map? body) (get body :tx-ops))]
    ;; Unlike XTDB's server, a body without "tx-ops" is an error, not an empty tx.
    (when-not (vector? ops)
      (throw (bad-request "body must be {\"tx-ops\": [...]}")))
    [202 (tx->json (xt/submit-tx node (mapv tx-op ops)))]))

(defn- await-tx [node params]
  (let [tx-id (or (long-param params "tx-id") (throw (bad-request "txId required")))
        timeout (Duration/ofMillis (or (long-param params "timeout") 10000))]
    [200 (tx->json (xt/await-tx node {::xt/tx-id tx-id} timeout))]))

(defn- tx-committed [node params]
  (let [tx-id (or (long-param params "tx-id") (throw (bad-request "txId required")))]
    [200 {"txCommitted?" (xt/tx-committed? node {::xt/tx-id tx-id})}]))

(defn- entity [node params]
  (let [eid (or (param params "eid") (throw (bad-request "eid required")))
        db (xt/db node (basis node params))]
    (if (bool-param params "history")
      (let [order (keyword (or (param params "sort-order") "asc"))
            _ (when-not (#{:asc :desc} order) (throw (bad-request "sortOrder must be asc or desc")))
            entries (xt/entity-history db eid order
                                       {:with-docs? (bool-param params "with-docs")
                                        :with-corrections? (bool-param params "with-corrections")})]
        [200 (mapv (fn [e]
                     (cond-> {"txTime" (::xt/tx-time e)
                              "txId" (::xt/tx-id e)
                              "validTime" (::xt/valid-time e)
                              "contentHash" (str (::xt/content-hash e))}
                       (contains? e ::xt/doc) (assoc "doc" (::xt/doc e))))
                   entries)])
      (if-let [doc (xt/entity db eid)]
        [200 doc]
        [404 {"error" (str "entity not found: " eid)}]))))

(defn- query [node params ex]
  (let [body (try (edn/read-string (body-string ex))
                  (catch Exception e (throw (bad-request (str "body is not EDN: " (.getMessage e))))))
        _ (when-not (and (map? body) (map? (:query body)))
            (throw (bad-request "body must be {:query {...} :in-args [...]}")))
        db (xt/db node (basis node params))]
    [200 (vec (apply xt/q db (:query body) (:in-args body)))]))

(defn- route [node ^HttpExchange ex]
  (let [method (.getRequestMethod ex)
        path (.getPath (.getRequestURI ex))
        params (query-params ex)]
    (case [method path]
      ["GET" "/_xtdb/status"] [200 (status-json node)]
      ["GET" "/_xtdb/sync"] [200 {"txTime" (xt/sync node (Duration/ofMillis (or (long-param params "timeout") 10000)))}]
      ["POST" "/_xtdb/submit-tx"] (submit-tx node ex)
      ["GET" "/_xtdb/await-tx"] (await-tx node params)
      ["GET" "/_xtdb/tx-committed"] (tx-committed node params)
      ["GET" "/_xtdb/latest-completed-tx"] (if-let [tx (xt/latest-completed-tx node)]
                                              [200 (tx->json tx)]
                                              [404 {"error" "no transaction has been indexed"}])
      ["GET" "/_xtdb/entity"] (entity node params)
      ["POST" "/_xtdb/query"] (query node params ex)
      [404 {"error" (str "no route: " method " " path)}])))

(defn- respond! [^HttpExchange ex status body]
  (let [bytes (.getBytes (write-json body) StandardCharsets/UTF_8)]
    (.set (.getResponseHeaders ex) "Content-Type" "application/json; charset=utf-8")
    (.sendResponseHeaders ex status (alength bytes))
    (with-open [out (.getResponseBody ex)]
      (.write out bytes))))

(defn- handler [node]
  (reify HttpHandler
    (handle [_ ex]
      (try
        (let [[status body] (try
                              (route node ex)
                              (catch TimeoutException e
                                [504 {"error" (str "timeout: " (.getMessage e))}])
                              (catch clojure.lang.ExceptionInfo e
                                (if-let [status (::status (ex-data e))]
                                  [status {"error" (ex-message e)}]
                                  (throw e)))
                              (catch IllegalArgumentException e
                                [400 {"error" (str (.getMessage e))}]))]
          (respond! ex status body))
        (catch Throwable t
          (log/warn t "request failed")
          (try (respond! ex 500 {"error" (str (.getName (class t)) ": " (.getMessage t))})
               (catch Throwable _)))
        (finally (.close ex))))))

(defn ->server
  "XTDB module: config `{:scm.xtdb-http/server {:host \"127.0.0.1\" :port 3000}}`."
  {::sys/deps {:node :xtdb/node}
   ::sys/args {:host {:doc "Interface to bind" :default "127.0.0.1" :spec ::sys/string}
               :port {:doc "Port" :default 3000 :spec ::sys/int}
               :threads {:doc "Handler threads (await-tx blocks one)" :default 32 :spec ::sys/int}}}
  ^Closeable [{:keys [node host port threads]}]
  (let [server (HttpServer/create (InetSocketAddress. ^String host (int port)) 64)
        pool (Executors/newFixedThreadPool (int threads))]
    (.createContext server "/" (handler node))
    (.setExecutor server pool)
    (.start server)
    (log/infof "HTTP API listening on http://%s:%d" host port)
    (reify Closeable
      (close [_]
        (.stop server 0)
        (.shutdownNow pool)))))
