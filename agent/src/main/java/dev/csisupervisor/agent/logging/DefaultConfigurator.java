package dev.csisupervisor.agent.logging;

import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.Configurator;
import ch.qos.logback.classic.spi.ConfiguratorRank;
import ch.qos.logback.core.spi.ContextAwareBase;
import dev.csisupervisor.agent.config.LogSettings;

/**
 * Found by logback through {@code META-INF/services} when it starts: sets up
 * {@link LogSettings#DEFAULT} (text lines on stderr at info, gRPC, Netty and MapDB at warn) before
 * anything is logged. Without it logback would log everything at debug to stdout. Stands aside
 * when {@code -Dlogback.configurationFile} names an XML file.
 */
@ConfiguratorRank(ConfiguratorRank.CUSTOM_NORMAL_PRIORITY)
public final class DefaultConfigurator extends ContextAwareBase implements Configurator {
  @Override
  public ExecutionStatus configure(LoggerContext context) {
    if (System.getProperty(AgentLogging.CONFIG_FILE_PROPERTY) != null) {
      return ExecutionStatus.INVOKE_NEXT_IF_ANY;
    }
    AgentLogging.setup(context).apply(LogSettings.DEFAULT);
    return ExecutionStatus.DO_NOT_INVOKE_NEXT_IF_ANY;
  }
}
