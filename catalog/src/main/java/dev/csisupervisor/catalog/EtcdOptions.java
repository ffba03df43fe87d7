package dev.csisupervisor.catalog;

import dev.csisupervisor.common.Bounds;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * How to reach etcd: its client endpoints, optional TLS (a CA to trust and a client certificate + key),
 * optional user/password authentication, and the deadline of each request.
 *
 * @param endpoints {@code http://host:port} or {@code https://host:port}, at least one; tried in order,
 *     the next one after a failure
 * @param caFile PEM CA bundle to trust (implies TLS); null for the JVM's default trust or plain http
 * @param certFile PEM client certificate (with {@code keyFile}); null for none
 * @param keyFile PEM PKCS#8 client key (with {@code certFile}); null for none
 * @param user etcd user (with {@code password}); null for no authentication
 * @param password the user's password; null when {@code user} is null
 * @param requestTimeout the deadline of each unary request (positive)
 */
public record EtcdOptions(
    List<URI> endpoints,
    Path caFile,
    Path certFile,
    Path keyFile,
    String user,
    String password,
    Duration requestTimeout) {

  public static final Duration DEFAULT_REQUEST_TIMEOUT = Duration.ofSeconds(5);

  public EtcdOptions {
    if (endpoints == null || endpoints.isEmpty()) {
      throw new IllegalArgumentException("endpoints must not be empty (e.g. http://127.0.0.1:2379)");
    }
    for (int i = 0; i < endpoints.size(); i++) {
      checkEndpoint("endpoints[" + i + "]", endpoints.get(i));
    }
    endpoints = List.copyOf(endpoints);
    if ((certFile == null) != (keyFile == null)) {
      throw new IllegalArgumentException(certFile == null
          ? "certFile is required with keyFile " + keyFile
          : "keyFile is required with certFile " + certFile);
    }
    if (user != null && user.isBlank()) {
      throw new IllegalArgumentException("user must not be blank");
    }
    if ((user == null) != (password == null)) {
      throw new IllegalArgumentException(user == null ? "user is required with a password" : "password is required with user '" + user + "'");
    }
    Bounds.positive(requestTimeout, "requestTimeout");
  }

  /** Plain endpoints, no TLS, no authentication, the default request timeout. */
  public static EtcdOptions of(String... endpoints) {
    return new EtcdOptions(parseEndpoints(String.join(",", endpoints)), null, null, null, null, null, DEFAULT_REQUEST_TIMEOUT);
  }

  /** These options with another request timeout. */
  public EtcdOptions withRequestTimeout(Duration timeout) {
    return new EtcdOptions(endpoints, caFile, certFile, keyFile, user, password, timeout);
  }

  /** Whether the connection uses TLS: an https endpoint or a CA file. */
  public boolean tls() {
    return caFile != null || certFile != null || endpoints.get(0).getScheme().equals("https");
  }

  /** The user, if authentication is configured. */
  public Optional<String> userName() {
    return Optional.ofNullable(user);
  }

  /**
   * Parses a comma-separated endpoint list; {@code host:port} without a scheme means {@code http://}.
   *
   * @throws IllegalArgumentException naming the bad entry
   */
  public static List<URI> parseEndpoints(String csv) {
    if (csv == null || csv.isBlank()) {
      throw new IllegalArgumentException("endpoints must not be empty (e.g. http://127.0.0.1:2379)");
    }
    List<URI> out = new ArrayList<>();
    String[] parts = csv.split(",");
    for (int i = 0; i < parts.length; i++) {
      String s = parts[i].strip();
      if (s.isEmpty()) {
        throw new IllegalArgumentException("endpoints[" + i + "] must not be empty in '" + csv + "'");
      }
      if (!s.contains("://")) {
        s = "http://" + s;
      }
      URI u;
      try {
        u = new URI(s);
      } catch (URISyntaxException e) {
        throw new IllegalArgumentException("endpoints[" + i + "] '" + parts[i].strip() + "' is not a URL: " + e.getReason());
      }
      checkEndpoint("endpoints[" + i + "]", u);
      out.add(u);
    }
    return out;
  }

  private static void checkEndpoint(String field, URI u) {
    if (u == null) {
      throw new IllegalArgumentException(field + " must not be null");
    }
    if (u.getScheme() == null || !(u.getScheme().equals("http") || u.getScheme().equals("https"))) {
      throw new IllegalArgumentException(field + " '" + u + "' must be http://host:port or https://host:port");
    }
    if (u.getHost() == null || u.getPort() < 1 || u.getPort() > 65535) {
      throw new IllegalArgumentException(field + " '" + u + "' needs a host and a port (1-65535)");
    }
    if (u.getPath() != null && !u.getPath().isEmpty() && !u.getPath().equals("/")) {
      throw new IllegalArgumentException(field + " '" + u + "' must not have a path");
    }
  }

  @Override
  public String toString() {
    // Never print the password.
    return "EtcdOptions[endpoints=" + endpoints + ", tls=" + tls() + ", user=" + user + ", requestTimeout=" + requestTimeout + "]";
  }
}
