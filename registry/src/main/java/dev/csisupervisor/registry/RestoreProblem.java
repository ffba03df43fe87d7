package dev.csisupervisor.registry;

/**
 * A state record that could not be restored when the registry opened (unknown format version, undecodable,
 * or content that does not match its key). Such a record is skipped, logged at ERROR, and left in the state
 * store untouched; see {@link PluginRegistry#restoreProblems()}.
 *
 * @param key the record's store key
 * @param reason why it was skipped
 */
public record RestoreProblem(String key, String reason) {
  public RestoreProblem {
    Checks.notNull(key, "key");
    Checks.notNull(reason, "reason");
  }
}
