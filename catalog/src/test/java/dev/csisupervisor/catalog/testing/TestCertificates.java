package dev.csisupervisor.catalog.testing;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.Key;
import java.security.KeyStore;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A throw-away CA, a server certificate for 127.0.0.1 and a client certificate, made with the JDK's own
 * {@code keytool} (no openssl needed): PEM certificates and PKCS#8 PEM keys, as etcd and grpc-java read them.
 */
public final class TestCertificates {
  public final Path caCert;
  public final Path serverCert;
  public final Path serverKey;
  public final Path clientCert;
  public final Path clientKey;

  private TestCertificates(Path dir) {
    caCert = dir.resolve("ca.pem");
    serverCert = dir.resolve("server.pem");
    serverKey = dir.resolve("server-key.pem");
    clientCert = dir.resolve("client.pem");
    clientKey = dir.resolve("client-key.pem");
  }

  public static TestCertificates create(Path dir) throws IOException, InterruptedException {
    return create(dir, true);
  }

  /** A CA and a client certificate only (no server certificate: its files are absent), a little faster. */
  public static TestCertificates createCaAndClient(Path dir) throws IOException, InterruptedException {
    return create(dir, false);
  }

  private static TestCertificates create(Path dir, boolean server) throws IOException, InterruptedException {
    Files.createDirectories(dir);
    TestCertificates c = new TestCertificates(dir);
    String pw = "changeit";
    keytool(dir, "-genkeypair", "-alias", "ca", "-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN=csi-test-ca",
        "-ext", "bc:c", "-validity", "2", "-keystore", "ca.p12", "-storetype", "PKCS12", "-storepass", pw);
    keytool(dir, "-exportcert", "-alias", "ca", "-keystore", "ca.p12", "-storepass", pw, "-rfc", "-file", "ca.pem");
    if (server) {
      c.issue(dir, "server", "CN=localhost", "san=ip:127.0.0.1,dns:localhost", pw);
    }
    c.issue(dir, "client", "CN=csi", "san=dns:csi", pw);
    return c;
  }

  private void issue(Path dir, String name, String dn, String san, String pw) throws IOException, InterruptedException {
    keytool(dir, "-genkeypair", "-alias", name, "-keyalg", "EC", "-groupname", "secp256r1", "-dname", dn, "-validity", "2",
        "-keystore", name + ".p12", "-storetype", "PKCS12", "-storepass", pw);
    keytool(dir, "-certreq", "-alias", name, "-keystore", name + ".p12", "-storepass", pw, "-file", name + ".csr");
    keytool(dir, "-gencert", "-alias", "ca", "-keystore", "ca.p12", "-storepass", pw, "-infile", name + ".csr",
        "-outfile", name + ".pem", "-rfc", "-ext", san, "-ext", "eku=serverAuth,clientAuth", "-validity", "2");
    try (InputStream in = Files.newInputStream(dir.resolve(name + ".p12"))) {
      KeyStore ks = KeyStore.getInstance("PKCS12");
      ks.load(in, pw.toCharArray());
      Key key = ks.getKey(name, pw.toCharArray());
      String pem = "-----BEGIN PRIVATE KEY-----\n" + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII))
          .encodeToString(key.getEncoded()) + "\n-----END PRIVATE KEY-----\n";
      Files.writeString(dir.resolve(name + "-key.pem"), pem);
    } catch (java.security.GeneralSecurityException e) {
      throw new IOException("cannot read " + name + ".p12", e);
    }
  }

  private static void keytool(Path dir, String... args) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "keytool").toString());
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
      throw new IOException("keytool " + String.join(" ", args) + " failed: " + out);
    }
  }
}
