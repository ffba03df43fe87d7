package dev.csisupervisor.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.grpc.netty.shaded.io.netty.buffer.ByteBuf;
import io.grpc.netty.shaded.io.netty.buffer.ByteBufUtil;
import io.grpc.netty.shaded.io.netty.buffer.Unpooled;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.DefaultHttp2HeadersDecoder;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.DefaultHttp2HeadersEncoder;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2Headers;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2HeadersEncoder;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The CLI's HPACK against Netty's (the agent's server): what one encodes, the other reads back. */
class HpackTest {
  @Test
  void rfc7541_c41_huffmanRequest() throws Exception {
    byte[] block = ByteBufUtil.decodeHexDump("828684418cf1e3c2e5f23a6ba0ab90f4ff");
    assertEquals(List.of(new Hpack.Field(":method", "GET"), new Hpack.Field(":scheme", "http"),
        new Hpack.Field(":path", "/"), new Hpack.Field(":authority", "www.example.com")), new Hpack().decode(block));
  }

  @Test
  void blocksNettyEncodes_withHuffmanAndItsDynamicTable_decodeToTheSameFields() throws Exception {
    // Huffman for every value it makes shorter (threshold 0), indexing into a dynamic table that evicts, after a
    // table size update.
    Http2HeadersEncoder netty = new DefaultHttp2HeadersEncoder(Http2HeadersEncoder.NEVER_SENSITIVE, false, 16, 0);
    netty.configuration().maxHeaderTableSize(256); // small: entries are evicted all along
    Hpack ours = new Hpack();
    Random random = new Random(29);
    for (int block = 0; block < 200; block++) {
      List<Hpack.Field> fields = new ArrayList<>();
      fields.add(new Hpack.Field(":status", "200"));
      fields.add(new Hpack.Field("content-type", "application/grpc"));
      for (int i = 0; i < random.nextInt(6); i++) {
        fields.add(new Hpack.Field("x-header-" + random.nextInt(40), value(random)));
      }
      fields.add(new Hpack.Field("grpc-message", value(random)));
      Http2Headers headers = new DefaultHttp2Headers(false);
      fields.forEach(f -> headers.add(f.name(), f.value()));
      ByteBuf out = Unpooled.buffer();
      netty.encodeHeaders(1, headers, out);
      assertEquals(fields, ours.decode(ByteBufUtil.getBytes(out)), "block " + block);
      out.release();
    }
  }

  @Test
  void whatWeEncode_nettyDecodes() throws Exception {
    List<Hpack.Field> fields = List.of(new Hpack.Field(":method", "POST"), new Hpack.Field(":path",
        "/csisupervisor.admin.v1.AgentAdmin/ListPlugins"), new Hpack.Field("grpc-timeout", "10000m"),
        new Hpack.Field("x-long", "v".repeat(300)));
    ByteBuf in = Unpooled.wrappedBuffer(Hpack.encode(fields));
    Http2Headers decoded = new DefaultHttp2HeadersDecoder(true).decodeHeaders(1, in);
    for (Hpack.Field f : fields) {
      assertEquals(f.value(), decoded.get(f.name()).toString());
    }
    assertEquals(fields.size(), decoded.size());
  }

  @Test
  void aBrokenBlock_isAnError_notAGuess() {
    assertThrows(Hpack.HpackException.class, () -> new Hpack().decode(new byte[] {(byte) 0xff, (byte) 0x80}));
    assertThrows(Hpack.HpackException.class, () -> new Hpack().decode(new byte[] {(byte) 0xbe})); // index 62: empty table
    assertThrows(Hpack.HpackException.class, () -> new Hpack().decode(new byte[] {0x00, 0x05, 'a'})); // short string
  }

  @Test
  void anIntegerPast2To31_isRefused_notWrapped() {
    // 127 + 16 << 28 = 2^32 + 127: with int arithmetic it wrapped to 127, a valid-looking length.
    byte[] block = {0x00, 0x7f, (byte) 0x80, (byte) 0x80, (byte) 0x80, (byte) 0x80, 0x10};
    Hpack.HpackException e = assertThrows(Hpack.HpackException.class, () -> new Hpack().decode(block));
    assertEquals("integer too large in a header block", e.getMessage());
    assertThrows(Hpack.HpackException.class, () -> Hpack.integer(new byte[] {(byte) 0xff, (byte) 0xff,
        (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, 0x01}, new int[] {0}, 7));
    assertEquals(Integer.MAX_VALUE, (int) integerOrFail(new byte[] {(byte) 0x7f, (byte) 0x80, (byte) 0xff,
        (byte) 0xff, (byte) 0xff, 0x07}));
  }

  private static int integerOrFail(byte[] in) {
    try {
      return Hpack.integer(in, new int[] {0}, 7);
    } catch (Hpack.HpackException e) {
      throw new AssertionError(e);
    }
  }

  @Test
  void anyBlock_decodesOrIsAnHpackException_only() {
    Random random = new Random(dev.csisupervisor.testing.TestSeed.value());
    Hpack hpack = new Hpack();
    for (int i = 0; i < 20_000; i++) {
      byte[] block = new byte[random.nextInt(24)];
      random.nextBytes(block);
      try {
        hpack.decode(block);
      } catch (Hpack.HpackException e) {
        hpack = new Hpack(); // the connection would end here; the next block gets a fresh table
      } catch (RuntimeException e) {
        throw new AssertionError("block " + i + " (" + ByteBufUtil.hexDump(block) + ", "
            + dev.csisupervisor.testing.TestSeed.describe() + ")", e);
      }
    }
  }

  private static String value(Random random) {
    String chars = "abcdefghijklmnopqrstuvwxyz0123456789 -_/%:=\"~";
    StringBuilder sb = new StringBuilder();
    for (int i = random.nextInt(60); i > 0; i--) {
      sb.append(chars.charAt(random.nextInt(chars.length())));
    }
    return sb.toString();
  }
}
