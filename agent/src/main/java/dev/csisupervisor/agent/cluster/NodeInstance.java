package dev.csisupervisor.agent.cluster;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.UUID;
import java.util.regex.Pattern;

/**
 * This agent's instance token: a random id made once in its data dir ({@value #FILE}) and the same across its
 * restarts, written into its node key in the catalog. Another agent started with the same {@code node_id} has
 * another data dir, so another token, and is refused while this one is alive; this agent restarted after a crash
 * has the same one, and takes its node key over at once instead of waiting for the old lease to expire.
 */
public final class NodeInstance {
  static final String FILE = "node-instance";
  private static final Pattern TOKEN = Pattern.compile("[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}");

  private NodeInstance() {}

  /**
   * The token in {@code dataDir}, made (and synced) if there is none or what is there does not read (a crash
   * while it was first written).
   *
   * @throws IOException if the data dir cannot be read or written
   */
  public static String load(Path dataDir) throws IOException {
    Path file = dataDir.resolve(FILE);
    for (int attempt = 0; attempt < 3; attempt++) {
      if (Files.exists(file)) {
        String token = Files.readString(file, StandardCharsets.US_ASCII).strip();
        if (TOKEN.matcher(token).matches()) {
          return token;
        }
        Files.delete(file); // a torn first write: nothing refers to it yet
      }
      String token = UUID.randomUUID().toString();
      Files.createDirectories(dataDir);
      try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
        ch.write(ByteBuffer.wrap((token + "\n").getBytes(StandardCharsets.US_ASCII)));
        ch.force(true);
      } catch (FileAlreadyExistsException raced) {
        continue; // another process made it meanwhile: read that one
      }
      try (FileChannel dir = FileChannel.open(dataDir, StandardOpenOption.READ)) {
        dir.force(true);
      }
      return token;
    }
    throw new IOException(file + " keeps changing while it is read");
  }
}
