"""The custom-resource types the provisioner serves; the stacks declare them, the handlers dispatch on them."""

NODE_SHAPE_RESOURCE = "Custom::CnqNodeShape"
CLUSTER_RESOURCE = "Custom::CnqCluster"
PORTAL_RESOURCE = "Custom::CnqPortal"
NODE_PROTECTION_RESOURCE = "Custom::CnqNodeProtection"
IDENTITY_RESOURCE = "Custom::CnqIdentity"
PERSISTENT_STORAGE_RESOURCE = "Custom::CnqPersistentStorage"
FLOATING_IPS_RESOURCE = "Custom::CnqFloatingIps"
