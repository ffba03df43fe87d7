package dev.csisupervisor.architecture;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static com.tngtech.archunit.library.Architectures.layeredArchitecture;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The module table of {@code ../shared/DESIGN.md} as rules over every module's main classes: each
 * module uses only the ones its row names (arrows point down), and the three "knows nothing of"
 * sentences under the table. A new arrow is a design change: change DESIGN.md and this test together.
 */
class LayeringTest {
  private static final String ROOT = "dev.csisupervisor";
  private static JavaClasses classes;

  @BeforeAll
  static void importEveryModule() {
    classes = new ClassFileImporter()
        .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
        .importPackages(ROOT);
  }

  @Test
  void everyModuleIsImported() {
    // Guards the rules below against passing on nothing: one known class of each module.
    for (String name : List.of("csi.v1.ProbeRequest", "admin.v1.ListPluginsRequest", "common.PluginIds",
        "client.CsiClient", "state.StateStore", "registry.PluginRegistry", "supervisor.CsiPluginSupervisor",
        "volumes.VolumeManager", "catalog.ClusterView", "mockplugin.MockCsiPlugin", "tasks.process.LaunchedProcess",
        "cli.AdminClient", "agent.Agent")) {
      assertTrue(classes.contain(ROOT + "." + name), ROOT + "." + name + " was not imported");
    }
  }

  @Test
  void modulesUseOnlyTheModulesBelowThem() {
    layeredArchitecture().consideringOnlyDependenciesInLayers()
        .layer("proto").definedBy(ROOT + ".csi..", ROOT + ".admin..")
        .layer("common").definedBy(ROOT + ".common..")
        .layer("csi-client").definedBy(ROOT + ".client..")
        .layer("state").definedBy(ROOT + ".state..")
        .layer("registry").definedBy(ROOT + ".registry..")
        .layer("supervisor").definedBy(ROOT + ".supervisor..")
        .layer("volumes").definedBy(ROOT + ".volumes..")
        .layer("catalog").definedBy(ROOT + ".catalog..")
        .layer("mock-plugin").definedBy(ROOT + ".mockplugin..")
        .layer("tasks").definedBy(ROOT + ".tasks..")
        .layer("cli").definedBy(ROOT + ".cli..")
        .layer("agent").definedBy(ROOT + ".agent..")
        .whereLayer("agent").mayNotBeAccessedByAnyLayer()
        .whereLayer("catalog").mayOnlyBeAccessedByLayers("agent")
        .whereLayer("volumes").mayOnlyBeAccessedByLayers("agent")
        .whereLayer("supervisor").mayOnlyBeAccessedByLayers("agent")
        .whereLayer("mock-plugin").mayOnlyBeAccessedByLayers("agent")
        .whereLayer("tasks").mayOnlyBeAccessedByLayers("agent")
        .whereLayer("cli").mayOnlyBeAccessedByLayers("agent")
        .whereLayer("registry").mayOnlyBeAccessedByLayers("supervisor", "volumes", "catalog", "agent")
        .whereLayer("csi-client").mayOnlyBeAccessedByLayers("supervisor", "volumes", "agent")
        .whereLayer("state").mayOnlyBeAccessedByLayers("registry", "volumes", "agent")
        .whereLayer("proto").mayOnlyBeAccessedByLayers("csi-client", "mock-plugin", "cli", "agent")
        .check(classes);
  }

  @Test
  void commonDependsOnNothingOfOurs() {
    noClasses().that().resideInAPackage(ROOT + ".common..")
        .should().dependOnClassesThat().resideOutsideOfPackages(ROOT + ".common..", "java..", "org.slf4j..")
        .because("common is the floor every module stands on")
        .check(classes);
  }

  @Test
  void theRegistryKnowsNothingOfGrpc() {
    noClasses().that().resideInAPackage(ROOT + ".registry..")
        .should().dependOnClassesThat().resideInAnyPackage("io.grpc..", "io.netty..", "com.google.protobuf..")
        .because("DESIGN.md: registry knows nothing of gRPC")
        .check(classes);
  }

  @Test
  void theStateKnowsNothingOfPlugins() {
    noClasses().that().resideInAPackage(ROOT + ".state..")
        .should().dependOnClassesThat().resideInAnyPackage(ROOT + ".registry..", ROOT + ".supervisor..",
            ROOT + ".client..", ROOT + ".volumes..", ROOT + ".csi..", "io.grpc..", "com.google.protobuf..")
        .because("DESIGN.md: state knows nothing of plugins beyond bytes and keys")
        .check(classes);
  }

  @Test
  void theCatalogKnowsNothingOfProcessesOrSockets() {
    noClasses().that().resideInAPackage(ROOT + ".catalog..")
        .should().dependOnClassesThat().resideInAnyPackage(ROOT + ".supervisor..", ROOT + ".client..",
            "io.grpc.netty..", "io.netty..", "java.nio.channels..")
        .orShould().dependOnClassesThat().haveFullyQualifiedName(ProcessBuilder.class.getName())
        .orShould().dependOnClassesThat().haveFullyQualifiedName(ProcessHandle.class.getName())
        .orShould().dependOnClassesThat().haveFullyQualifiedName(Process.class.getName())
        .orShould().dependOnClassesThat().haveFullyQualifiedName(java.net.UnixDomainSocketAddress.class.getName())
        .because("DESIGN.md: catalog knows nothing of processes or sockets")
        .check(classes);
  }

  @Test
  void theTaskRunnerKnowsProcessesAndFiles_notYamlGrpcOrTheAdminApi() {
    noClasses().that().resideInAPackage(ROOT + ".tasks..")
        .should().dependOnClassesThat().resideInAnyPackage("io.grpc..", "com.google.protobuf..",
            "com.fasterxml.jackson.dataformat.yaml..", ROOT + ".admin..", ROOT + ".agent..")
        .because("the task runner sits under the daemon: it launches, restarts and measures processes")
        .check(classes);
  }

  @Test
  void theCliKnowsTheAdminApi_notTheDaemon() {
    noClasses().that().resideInAPackage(ROOT + ".cli..")
        .should().dependOnClassesThat().resideInAnyPackage(ROOT + ".agent..", ROOT + ".registry..",
            ROOT + ".state..", ROOT + ".supervisor..", ROOT + ".volumes..", ROOT + ".catalog..", ROOT + ".tasks..",
            ROOT + ".client..", ROOT + ".csi..", "com.fasterxml.jackson.dataformat.yaml..", "org.slf4j..")
        .because("the CLI beside the daemon talks to it over the admin API; the program that embeds it reads configs")
        .check(classes);
  }

  @Test
  void noPackageCycles() {
    slices().matching(ROOT + ".(**)").should().beFreeOfCycles().check(classes);
  }
}
