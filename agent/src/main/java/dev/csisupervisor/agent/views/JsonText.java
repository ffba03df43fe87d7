package dev.csisupervisor.agent.views;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;

/** Maps and lists as the JSON text the cluster commands' {@code --json} print and the operator page serves. */
public final class JsonText {
  private JsonText() {}

  /** Made on first use: Jackson is some 300 classes no other command should pay for. */
  private static final class Mapper {
    static final ObjectMapper INDENTED = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
  }

  /** {@code o} as indented JSON. */
  public static String write(Object o) {
    try {
      return Mapper.INDENTED.writeValueAsString(o);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }
}
